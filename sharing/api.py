"""Sharing API: links, grants, transfer, fork, audit, shared-with-me.
Each view parses, calls request_access + a service or selector, serializes."""

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from playground.api import Page, PromptScopedApi, paginated
from playground.permissions import prompts_shared_with, request_access

from . import selectors, services
from .models import TransferOffer
from .serializers import (
    AuditEventSerializer,
    ForkedPromptSerializer,
    ForkSerializer,
    GrantCreateSerializer,
    GrantSerializer,
    LinkCreatedSerializer,
    LinkCreateSerializer,
    LinkSerializer,
    SharedPromptSerializer,
    TransferAnswerSerializer,
    TransferOfferSerializer,
    TransferSerializer,
)


class LinkListApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=LinkSerializer(many=True), description="Owner only.")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="own")
        return paginated(request, self, selectors.link_list(prompt=prompt), ("-created_at",),
                         lambda items: LinkSerializer(items, many=True).data)

    @extend_schema(request=LinkCreateSerializer, responses={201: LinkCreatedSerializer},
                   description="Owner only. The token is in this response only; we keep its hash.")
    def post(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="own")
        data = LinkCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        link, token = services.link_create(prompt=prompt, actor=request.user, mode=v["mode"],
                                           name=v["name"], version_id=v["version"],
                                           expires_at=v["expires_at"], role=v["role"])
        body = LinkSerializer(link).data | {"token": token, "url": request.build_absolute_uri(f"/s/{token}")}
        return Response(body, status=status.HTTP_201_CREATED)


class LinkDetailApi(PromptScopedApi):
    @extend_schema(responses={200: LinkSerializer}, description="Revoke (owner only); idempotent.")
    def delete(self, request, prompt_id, link_id):
        prompt = request_access(request, prompt_id=prompt_id, need="own")
        link = services.link_revoke(prompt=prompt, link_id=link_id, actor=request.user)
        return Response(LinkSerializer(link).data)


class GrantListApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=GrantSerializer(many=True), description="Owner only.")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="own")
        return paginated(request, self, selectors.grant_list(prompt=prompt), ("-created_at", "-id"),
                         lambda items: GrantSerializer(items, many=True).data)

    @extend_schema(request=GrantCreateSerializer, responses={201: GrantSerializer},
                   description="Owner only. Grant to `username` or to `team` (id); a second grant to "
                               "the same grantee changes its role.")
    def post(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="own")
        data = GrantCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        grant = services.grant_create(prompt=prompt, actor=request.user, role=v["role"],
                                      username=v["username"], team_id=v["team"], expires_at=v["expires_at"])
        return Response(GrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class GrantDetailApi(PromptScopedApi):
    @extend_schema(responses={200: GrantSerializer}, description="Revoke (owner only); idempotent.")
    def delete(self, request, prompt_id, grant_id):
        prompt = request_access(request, prompt_id=prompt_id, need="own")
        grant = services.grant_revoke(prompt=prompt, grant_id=grant_id, actor=request.user)
        return Response(GrantSerializer(grant).data)


class TransferApi(PromptScopedApi):
    @extend_schema(request=TransferSerializer, responses={202: TransferOfferSerializer},
                   description="Owner only: offer the prompt to another user, who becomes the owner "
                               "when they accept (POST /api/prompts/transfers/<id>).")
    def post(self, request, prompt_id):
        data = TransferSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        with transaction.atomic():
            prompt = request_access(request, prompt_id=prompt_id, need="own", for_update=True)
            offer = services.transfer_offer(prompt=prompt, actor=request.user, **data.validated_data)
        return Response(TransferOfferSerializer(offer).data, status=status.HTTP_202_ACCEPTED)


class TransferOfferListApi(APIView):
    @extend_schema(responses=TransferOfferSerializer(many=True))
    def get(self, request):
        """Prompts offered to the signed-in user, waiting for an answer."""
        offers = TransferOffer.objects.filter(to_user=request.user).select_related("prompt", "from_user",
                                                                                   "to_user")
        return Response(TransferOfferSerializer(offers, many=True).data)


class TransferOfferApi(APIView):
    @extend_schema(request=TransferAnswerSerializer, responses={200: None})
    def post(self, request, offer_id: int):
        """The receiver accepts (becomes the owner) or declines."""
        data = TransferAnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        prompt = services.transfer_answer(offer_id=offer_id, user=request.user,
                                          accept=data.validated_data["accept"])
        if prompt is None:
            return Response({"accepted": False})
        return Response(ForkedPromptSerializer(prompt).data | {"owner": prompt.owner.username,
                                                              "accepted": True})


class ForkApi(PromptScopedApi):
    @extend_schema(request=ForkSerializer, responses={201: ForkedPromptSerializer},
                   description="Copy a version into a new prompt of your own (any role that can view, "
                               "signed in).")
    def post(self, request, prompt_id):
        data = ForkSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        source = request_access(request, prompt_id=prompt_id, need="fork",
                                version_id=data.validated_data["version"])
        fork = services.prompt_fork(source=source, version_id=data.validated_data["version"],
                                    owner=request.user, title=data.validated_data["title"])
        return Response(ForkedPromptSerializer(fork).data, status=status.HTTP_201_CREATED)


class AuditListApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=AuditEventSerializer(many=True),
                   description="Shares, grants, revocations, expiries, transfers and label moves, newest "
                               "first (owner and editors).")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        return paginated(request, self, selectors.audit_list(prompt=prompt), ("-id",),
                         lambda items: AuditEventSerializer(items, many=True).data)


class SharedWithMeApi(APIView):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=SharedPromptSerializer(many=True),
                   description="Prompts others granted to you or to a team you are in.")
    def get(self, request):
        return paginated(request, self, prompts_shared_with(user=request.user),
                         ("-updated_at", "-created_at"),
                         lambda items: SharedPromptSerializer(items, many=True).data)
