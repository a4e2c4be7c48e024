"""Users are Django's; an Account holds what staff set on one (its tier); teams
group users; API keys give programs their account's tier."""

import hashlib
import secrets

from django.conf import settings
from django.db import models

from core.vocabulary import Tier


class Account(models.Model):
    """What belongs to a user's account but not to Django's User: the tier.

    The tier is set by staff (the admin, `manage.py account_tier`; later billing),
    never by the user: accounts.services.account_tier_set, which also moves the
    account's keys. No row means the free tier."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="account")
    tier = models.CharField(max_length=10, choices=Tier.choices, default=Tier.FREE)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.user} ({self.tier})"


class Team(models.Model):
    name = models.CharField(max_length=100)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                              related_name="owned_teams")
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership",
                                     related_name="teams")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="uniq_team_member")]


class TeamInvitation(models.Model):
    """A team's owner invites; only the invitee's accept makes a membership."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="team_invitations")
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="uniq_team_invitation")]


KEY_PREFIX = "py_"


def hash_key(raw_key: str) -> str:
    """Keys carry 256 bits of randomness, so a plain SHA-256 (no slow KDF) is
    safe and makes lookup one indexed equality on the hash."""
    return hashlib.sha256(raw_key.encode()).hexdigest()


def generate_raw_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


class ApiKey(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_keys")
    name = models.CharField(max_length=100)
    # The account's tier, copied when the key is made and whenever staff change it
    # (account_tier_set): the gateway reads it with the key, no join per request.
    tier = models.CharField(max_length=10, choices=Tier.choices, default=Tier.FREE)
    # First characters of the key, shown in lists so users can tell keys apart.
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
