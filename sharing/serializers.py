"""Request shapes (types only; rules live in services) and response shapes."""

from django.utils import timezone
from rest_framework import serializers

from core.error_codes import DomainError

from .models import AuditEvent, Grant, ShareLink


class LinkCreateSerializer(serializers.Serializer):
    mode = serializers.CharField(default="public", help_text="public (anyone) or login (signed-in users)")
    name = serializers.CharField(required=False, allow_blank=True, default="")
    version = serializers.UUIDField(required=False, allow_null=True, default=None,
                                    help_text="Pin the link to one version; omit for all versions.")
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    role = serializers.CharField(required=False, allow_null=True, default=None,
                                 help_text="Links are view-only; only 'viewer' is accepted.")


class UnversionedLinkCreateSerializer(LinkCreateSerializer):
    """A link of a kind without versions (a dataset) reaches all of them: it is
    never pinned to one (a `version` is refused, not ignored)."""

    version = None

    def to_internal_value(self, data):
        if isinstance(data, dict) and data.get("version") is not None:
            kind = self.context["kind"]
            raise DomainError(f"A {kind} link reaches all its versions; it takes no version.",
                              code="unsupported_parameter", field="version")
        return {**super().to_internal_value(data), "version": None}


class LinkSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True)
    state = serializers.SerializerMethodField()

    class Meta:
        model = ShareLink
        fields = ["id", "name", "mode", "version", "expires_at", "created_by", "created_at", "revoked_at",
                  "state"]

    def get_state(self, obj) -> str:
        if obj.revoked_at:
            return "revoked"
        return "expired" if obj.expires_at and obj.expires_at <= timezone.now() else "active"


class LinkCreatedSerializer(LinkSerializer):
    token = serializers.CharField(help_text="Shown once; send as X-Share-Token or open url.")
    url = serializers.CharField()

    class Meta(LinkSerializer.Meta):
        fields = [*LinkSerializer.Meta.fields, "token", "url"]


class GrantCreateSerializer(serializers.Serializer):
    username = serializers.CharField(required=False, default=None)
    team = serializers.IntegerField(required=False, default=None, help_text="Team id")
    role = serializers.CharField(default="viewer", help_text="viewer or editor")
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


class GrantSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True, allow_null=True)
    team_name = serializers.CharField(source="team.name", read_only=True, allow_null=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True)

    class Meta:
        model = Grant
        fields = ["id", "username", "team", "team_name", "role", "created_by", "created_at", "expires_at",
                  "revoked_at"]


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_name")

    class Meta:
        model = AuditEvent
        fields = ["id", "action", "target", "actor", "detail", "request_id", "created_at"]
