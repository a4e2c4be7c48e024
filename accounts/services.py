"""Writes for accounts: teams, API keys."""

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import ApiError

from .models import ApiKey, Membership, Team, Tier, generate_raw_key, hash_key

User = get_user_model()


def user_create(*, username: str, password: str, email: str = "") -> User:
    username = (username or "").strip()
    if not username:
        raise ApiError("Choose a username.", code="username_required", field="username")
    if User.objects.filter(username__iexact=username).exists():
        raise ApiError(f"The username '{username}' is taken.", code="username_taken",
                       field="username")
    try:
        validate_password(password, User(username=username, email=email))
    except DjangoValidationError as exc:
        raise ApiError(" ".join(exc.messages), code="weak_password", field="password") from exc
    try:
        return User.objects.create_user(username=username, password=password, email=email)
    except IntegrityError as exc:  # lost a race with a concurrent signup
        raise ApiError(f"The username '{username}' is taken.", code="username_taken",
                       field="username") from exc


def api_key_create(*, user, name: str, tier: str = Tier.FREE) -> tuple[ApiKey, str]:
    """Returns the key row and the raw key, which is shown once and never stored."""
    if tier not in Tier.values:
        raise ApiError(f"Unknown tier '{tier}'.", code="invalid_tier", field="tier")
    raw = generate_raw_key()
    key = ApiKey.objects.create(user=user, name=name or "default", tier=tier,
                                prefix=raw[:10], key_hash=hash_key(raw))
    return key, raw


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


def team_member_add(*, team: Team, user) -> None:
    Membership.objects.get_or_create(team=team, user=user)


def team_member_remove(*, team: Team, user) -> None:
    if user.pk == team.owner_id:
        raise ApiError("The owner cannot leave their team.", code="owner_cannot_leave")
    Membership.objects.filter(team=team, user=user).delete()
