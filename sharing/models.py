"""Share links, grants, the audit log and transfer offers. A link or a grant has
one foreign key per kind of shared object (sharing.kinds), named after the kind;
the shared models are named by "<app>.<Model>" (no import of the apps above)."""

import uuid

from django.conf import settings
from django.db import models

# Tables keep the names they had in the playground app (Meta.db_table): an upgrade renames nothing.


class LinkMode(models.TextChoices):
    PUBLIC = "public", "Anyone with the link"
    LOGIN = "login", "Any signed-in user with the link"


class ShareLink(models.Model):
    """A bearer link to view a prompt (all versions, or one pinned version) or a
    dataset (its versions and rows; runs stay with accounts).
    Only the SHA-256 of the token is kept: the token has 256 random bits, so a
    plain hash is safe and lookup is one indexed equality on the hash, whose
    timing says nothing about the secret."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    prompt = models.ForeignKey("playground.Prompt", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="share_links")
    dataset = models.ForeignKey("evals.Dataset", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="share_links")
    version = models.ForeignKey("playground.PromptVersion", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    mode = models.CharField(max_length=8, choices=LinkMode.choices)
    name = models.CharField(max_length=100, blank=True, default="")
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Set once when the expiry is first noticed, so it is audited exactly once.
    expiry_audited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "playground_sharelink"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["prompt", "-created_at"]),
                   models.Index(fields=["dataset", "-created_at"])]
        constraints = [models.CheckConstraint(
            condition=models.Q(prompt__isnull=True) ^ models.Q(dataset__isnull=True),
            name="link_exactly_one_subject")]

    def __str__(self):
        return self.name or str(self.pk)


class GrantRole(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    EDITOR = "editor", "Editor"


class Grant(models.Model):
    """Access to a prompt or a dataset for one account or for every member of a team."""

    prompt = models.ForeignKey("playground.Prompt", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="grants")
    dataset = models.ForeignKey("evals.Dataset", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="grants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="prompt_grants")
    team = models.ForeignKey("accounts.Team", null=True, blank=True, on_delete=models.CASCADE,
                             related_name="prompt_grants")
    role = models.CharField(max_length=8, choices=GrantRole.choices)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "playground_grant"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(user__isnull=True) ^ models.Q(team__isnull=True),
                                   name="grant_exactly_one_grantee"),
            models.CheckConstraint(condition=models.Q(prompt__isnull=True) ^ models.Q(dataset__isnull=True),
                                   name="grant_exactly_one_subject"),
            # At most one live grant per grantee: a second grant changes the role.
            models.UniqueConstraint(fields=["prompt", "user"], condition=models.Q(revoked_at__isnull=True),
                                    name="uniq_live_grant_user"),
            models.UniqueConstraint(fields=["prompt", "team"], condition=models.Q(revoked_at__isnull=True),
                                    name="uniq_live_grant_team"),
            models.UniqueConstraint(fields=["dataset", "user"], condition=models.Q(revoked_at__isnull=True),
                                    name="uniq_live_dataset_grant_user"),
            models.UniqueConstraint(fields=["dataset", "team"], condition=models.Q(revoked_at__isnull=True),
                                    name="uniq_live_dataset_grant_team"),
        ]
        indexes = [models.Index(fields=["user", "prompt"]), models.Index(fields=["team", "prompt"]),
                   models.Index(fields=["user", "dataset"]), models.Index(fields=["team", "dataset"])]


class AuditEvent(models.Model):
    """Append-only. `prompt_id` (or `dataset_id`, for a dataset's shares) is a
    plain column, not a foreign key, so the trail outlives what it is about;
    `actor_name` outlives the account."""

    prompt_id = models.UUIDField(null=True, blank=True, db_index=True)
    dataset_id = models.UUIDField(null=True, blank=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                              related_name="+")
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=32)
    target = models.CharField(max_length=200)
    detail = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "playground_auditevent"
        ordering = ["-id"]
        indexes = [models.Index(fields=["prompt_id", "-id"])]


class TransferOffer(models.Model):
    """An owner offers a prompt to another user; it changes hands only when the
    receiver accepts, and only while the offerer still owns it."""

    prompt = models.ForeignKey("playground.Prompt", on_delete=models.CASCADE, related_name="transfer_offers")
    from_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    to_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="transfer_offers")
    keep_access = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "playground_transferoffer"
        constraints = [models.UniqueConstraint(fields=["prompt", "to_user"], name="uniq_transfer_offer")]
