from django.contrib.auth.password_validation import MinimumLengthValidator, get_default_password_validators
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import ApiKey, Team, TeamInvitation, Tier


def _password_min_length() -> int:
    lengths = [v.min_length for v in get_default_password_validators()
               if isinstance(v, MinimumLengthValidator)]
    return max(lengths, default=1)


# What user_create's password validators check that a schema can say: the length, not
# only digits (a common password, or one like the username, is refused all the same).
@extend_schema_field({"type": "string", "minLength": _password_min_length(), "pattern": "\\D"})
class PasswordField(serializers.CharField):
    def __init__(self, **kwargs):
        # A blank one is too short, as the validators say (and the schema's minLength stays).
        super().__init__(allow_blank=True, **kwargs)


class SignupSerializer(serializers.Serializer):
    username = serializers.RegexField(r"\S", max_length=150)  # not only spaces
    password = PasswordField(write_only=True)
    email = serializers.EmailField(required=False, allow_blank=True)


class ApiKeySerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiKey
        fields = ["id", "name", "tier", "prefix", "created_at", "last_used_at", "revoked_at"]
        read_only_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]


class ApiKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    # Optional: a key gets its account's tier; naming another one is a 403 tier_not_allowed.
    tier = serializers.ChoiceField(choices=Tier.choices, required=False)


class TeamSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    members = serializers.SlugRelatedField(many=True, read_only=True, slug_field="username")

    class Meta:
        model = Team
        fields = ["id", "name", "owner", "members", "created_at"]


class TeamMemberSerializer(serializers.Serializer):
    username = serializers.CharField()


class TeamInvitationSerializer(serializers.ModelSerializer):
    team = serializers.IntegerField(source="team_id", read_only=True)
    team_name = serializers.CharField(source="team.name", read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)
    invited_by = serializers.CharField(source="invited_by.username", read_only=True)

    class Meta:
        model = TeamInvitation
        fields = ["id", "team", "team_name", "username", "invited_by", "created_at"]


class InvitationAnswerSerializer(serializers.Serializer):
    accept = serializers.BooleanField()
