from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.jsonbody import validated

from . import selectors, services
from .serializers import (
    ApiKeyCreateSerializer,
    ApiKeySerializer,
    InvitationAnswerSerializer,
    SignupSerializer,
    TeamInvitationSerializer,
    TeamMemberSerializer,
    TeamSerializer,
)
from .throttling import check_signup_allowed


class SignupApi(APIView):
    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(request=SignupSerializer, responses={201: None})
    def post(self, request):
        check_signup_allowed(request)
        data = validated(SignupSerializer, request)
        user = services.user_create(**data)
        return Response({"id": user.pk, "username": user.username}, status=status.HTTP_201_CREATED)


class MeApi(APIView):
    @extend_schema(responses={200: None})
    def get(self, request):
        key = request.auth if hasattr(request.auth, "tier") else None
        return Response({"id": request.user.pk, "username": request.user.username,
                         "tier": key.tier if key else None})


class ApiKeyListApi(APIView):
    @extend_schema(responses=ApiKeySerializer(many=True))
    def get(self, request):
        return Response(ApiKeySerializer(selectors.api_key_list(user=request.user), many=True).data)

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeySerializer})
    def post(self, request):
        data = validated(ApiKeyCreateSerializer, request)
        key, raw = services.api_key_create(user=request.user, **data)
        # The raw key is in this response only; we keep its hash.
        return Response(ApiKeySerializer(key).data | {"key": raw}, status=status.HTTP_201_CREATED)


class ApiKeyDetailApi(APIView):
    @extend_schema(responses={200: ApiKeySerializer})
    def delete(self, request, key_id: int):
        key = get_object_or_404(selectors.api_key_list(user=request.user), pk=key_id)
        return Response(ApiKeySerializer(services.api_key_revoke(key=key)).data)


class TeamListApi(APIView):
    @extend_schema(responses=TeamSerializer(many=True))
    def get(self, request):
        return Response(TeamSerializer(selectors.team_list(user=request.user), many=True).data)

    @extend_schema(request=TeamSerializer, responses={201: TeamSerializer})
    def post(self, request):
        data = validated(TeamSerializer, request)
        team = services.team_create(owner=request.user, name=data["name"])
        return Response(TeamSerializer(team).data, status=status.HTTP_201_CREATED)


class InvitationListApi(APIView):
    @extend_schema(responses=TeamInvitationSerializer(many=True))
    def get(self, request):
        """Team invitations waiting for the signed-in user's answer."""
        invitations = selectors.invitation_list(user=request.user)
        return Response(TeamInvitationSerializer(invitations, many=True).data)


class InvitationApi(APIView):
    @extend_schema(request=InvitationAnswerSerializer, responses={200: None})
    def post(self, request, invitation_id: int):
        """Accept (join the team) or decline an invitation."""
        invitation = selectors.access_invitation(user=request.user, invitation_id=invitation_id)
        data = validated(InvitationAnswerSerializer, request)
        team_id = invitation.team_id
        services.team_invitation_answer(invitation=invitation, accept=data["accept"])
        return Response({"team": team_id, "joined": data["accept"]})


class TeamMembershipApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def delete(self, request, team_id: int):
        """Leave the team (any member but its owner)."""
        team = selectors.access_team_as_member(user=request.user, team_id=team_id)
        services.team_leave(team=team, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamMemberApi(APIView):
    # 202: invited (not a member until they accept); 200: already a member.
    @extend_schema(request=TeamMemberSerializer,
                   responses={202: TeamInvitationSerializer, 200: TeamSerializer})
    def post(self, request, team_id: int):
        team = selectors.access_team_as_owner(user=request.user, team_id=team_id)
        data = validated(TeamMemberSerializer, request)
        member = selectors.user_by_username(data["username"])
        # An invitation: they join when they accept it (POST /api/accounts/invitations/<id>).
        invitation = services.team_invite(team=team, user=member, invited_by=request.user)
        if invitation is None:
            return Response(TeamSerializer(team).data)  # already a member
        return Response(TeamInvitationSerializer(invitation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=TeamMemberSerializer, responses={200: TeamSerializer})
    def delete(self, request, team_id: int):
        team = selectors.access_team_as_owner(user=request.user, team_id=team_id)
        data = validated(TeamMemberSerializer, request)
        member = selectors.user_by_username(data["username"])
        services.team_member_remove(team=team, user=member)
        return Response(TeamSerializer(team).data)


