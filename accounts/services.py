"""Writes for accounts: tiers, teams, API keys."""

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.commit import after_commit
from core.error_codes import DomainError

from .keycache import account_tier_changed, keys_changed
from .models import Account, ApiKey, Membership, Team, TeamInvitation, Tier, generate_raw_key, hash_key
from .selectors import account_tier

User = get_user_model()


def user_create(*, username: str, password: str, email: str = "") -> User:
    username = (username or "").strip()
    if not username:
        raise DomainError("Choose a username.", code="username_required", field="username")
    if User.objects.filter(username__iexact=username).exists():
        raise DomainError(f"The username '{username}' is taken.", code="username_taken",
                          field="username")
    try:
        validate_password(password, User(username=username, email=email))
    except DjangoValidationError as exc:
        raise DomainError(" ".join(exc.messages), code="weak_password", field="password") from exc
    try:
        return User.objects.create_user(username=username, password=password, email=email)
    except IntegrityError as exc:  # lost a race with a concurrent signup
        raise DomainError(f"The username '{username}' is taken.", code="username_taken",
                          field="username") from exc


def api_key_create(*, user, name: str, tier: str | None = None) -> tuple[ApiKey, str]:
    """Returns the key row and the raw key, which is shown once and never stored.

    The key has its account's tier. Naming another tier is refused: a tier is
    set on the account by staff, never chosen by the user (account_tier_set)."""
    if tier is not None and tier not in Tier.values:
        raise DomainError(f"Unknown tier '{tier}'.", code="invalid_tier", field="tier")
    has = account_tier(user=user)
    if tier is not None and tier != has:
        raise DomainError(f"This account has the {has} tier; a key gets its account's tier, and "
                          f"only staff change it.", code="tier_not_allowed", field="tier")
    raw = generate_raw_key()
    key = ApiKey.objects.create(user=user, name=name or "default", tier=has,
                                prefix=raw[:10], key_hash=hash_key(raw))
    return key, raw


@transaction.atomic
def account_tier_set(*, user, tier: str) -> Account:
    """Staff (the admin, `manage.py account_tier`, later billing) set an account's
    tier; all its keys and its browser sessions take it, in this process at once,
    in every other within the key cache's 30 s."""
    if tier not in Tier.values:
        raise DomainError(f"Unknown tier '{tier}'.", code="invalid_tier", field="tier")
    account, _ = Account.objects.select_for_update().get_or_create(user=user)
    account.tier = tier
    account.save()
    key_ids = list(ApiKey.objects.filter(user=user).exclude(tier=tier).values_list("pk", flat=True))
    ApiKey.objects.filter(pk__in=key_ids).update(tier=tier)
    after_commit(keys_changed, key_ids)
    after_commit(account_tier_changed, user.pk)
    return account


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])  # accounts.keycache tells every process
    return key


@transaction.atomic
def team_create(*, owner, name: str) -> Team:
    team = Team.objects.create(owner=owner, name=name)
    Membership.objects.create(team=team, user=owner)
    return team


def team_invite(*, team: Team, user, invited_by) -> TeamInvitation | None:
    """The owner invites `user`; nothing changes for them until they accept.
    None when they are already a member."""
    if Membership.objects.filter(team=team, user=user).exists():
        return None
    invitation, _ = TeamInvitation.objects.get_or_create(team=team, user=user,
                                                         defaults={"invited_by": invited_by})
    return invitation


@transaction.atomic
def team_invitation_answer(*, invitation: TeamInvitation, accept: bool) -> None:
    """The invitee accepts (joins) or declines; either way the invitation is gone."""
    if accept:
        team_member_add(team=invitation.team, user=invitation.user)
    invitation.delete()


def team_member_add(*, team: Team, user) -> None:
    """Makes a membership at once: for an accepted invitation (team_invitation_answer) and team_create."""
    Membership.objects.get_or_create(team=team, user=user)


def team_leave(*, team: Team, user) -> None:
    """A member leaves a team (its grants stop reaching them on the next request)."""
    if user.pk == team.owner_id:
        raise DomainError(code="owner_cannot_leave")
    if not Membership.objects.filter(team=team, user=user).delete()[0]:
        raise DomainError("No such team.", code="team_not_found")


def team_member_remove(*, team: Team, user) -> None:
    if user.pk == team.owner_id:
        raise DomainError(code="owner_cannot_leave")
    Membership.objects.filter(team=team, user=user).delete()
