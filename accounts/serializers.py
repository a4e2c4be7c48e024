from rest_framework import serializers

from .models import ApiKey, Team, Tier


class SignupSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(write_only=True)
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
