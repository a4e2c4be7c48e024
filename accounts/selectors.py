from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404

from .models import Account, ApiKey, Team, TeamInvitation, Tier

User = get_user_model()


def api_key_list(*, user):
    return ApiKey.objects.filter(user=user)


def team_list(*, user):
    return Team.objects.filter(members=user).select_related("owner").prefetch_related("members")


def access_team_as_owner(*, user, team_id: int) -> Team:
    """Strangers get 404: a team they are not in does not exist for them."""
    return get_object_or_404(Team, pk=team_id, owner=user)


def access_team_as_member(*, user, team_id: int) -> Team:
    return get_object_or_404(Team, pk=team_id, members=user)


def invitation_list(*, user):
    return TeamInvitation.objects.filter(user=user).select_related("team", "invited_by")


def access_invitation(*, user, invitation_id: int) -> TeamInvitation:
    """Only the invitee sees an invitation; anyone else gets 404."""
    invitations = TeamInvitation.objects.select_related("team", "user")
    return get_object_or_404(invitations, pk=invitation_id, user=user)


def user_by_username(username: str):
    return get_object_or_404(User, username=username)


def account_tier(*, user) -> str:
    """The account's tier (set by staff); free when none was ever set."""
    tier = Account.objects.filter(user_id=user.pk).values_list("tier", flat=True).first()
    return tier or Tier.FREE
