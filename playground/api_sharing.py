"""A prompt's ownership and sharing trail: transfer offers and answers, forks,
the audit log, and the prompts shared with me. Links and grants are the
sharing API's (sharing.api, mounted in urls.py)."""

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.jsonbody import validated
from core.pagination import Page, paginated
from sharing.models import TransferOffer
from sharing.selectors import audit_list
from sharing.serializers import AuditEventSerializer

from . import ownership
from .api import PromptScopedApi
from .permissions import prompts_shared_with, request_access
from .serializers import (
    ForkedPromptSerializer,
    ForkSerializer,
    SharedPromptSerializer,
    TransferAnswerSerializer,
    TransferOfferSerializer,
    TransferSerializer,
)


class TransferApi(PromptScopedApi):
    @extend_schema(request=TransferSerializer, responses={202: TransferOfferSerializer},
                   description="Owner only: offer the prompt to another user, who becomes the owner "
                               "when they accept (POST /api/prompts/transfers/<id>).")
    def post(self, request, prompt_id):
        data = validated(TransferSerializer, request)
        with transaction.atomic():
            prompt = request_access(request, prompt_id=prompt_id, need="own", for_update=True)
            offer = ownership.transfer_offer(prompt=prompt, actor=request.user, **data)
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
        data = validated(TransferAnswerSerializer, request)
        prompt = ownership.transfer_answer(offer_id=offer_id, user=request.user, accept=data["accept"])
        if prompt is None:
            return Response({"accepted": False})
        return Response(ForkedPromptSerializer(prompt).data | {"owner": prompt.owner.username,
                                                              "accepted": True})


class ForkApi(PromptScopedApi):
    @extend_schema(request=ForkSerializer, responses={201: ForkedPromptSerializer},
                   description="Copy a version into a new prompt of your own (any role that can view, "
                               "signed in).")
    def post(self, request, prompt_id):
        data = validated(ForkSerializer, request)
        source = request_access(request, prompt_id=prompt_id, need="fork", version_id=data["version"])
        fork = ownership.prompt_fork(source=source, version_id=data["version"], owner=request.user,
                                    title=data["title"])
        return Response(ForkedPromptSerializer(fork).data, status=status.HTTP_201_CREATED)


class AuditListApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=AuditEventSerializer(many=True),
                   description="Shares, grants, revocations, expiries, transfers and label moves, newest "
                               "first (owner and editors).")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        return paginated(request, self, audit_list(prompt=prompt), ("-id",),
                         lambda items: AuditEventSerializer(items, many=True).data)


class SharedWithMeApi(APIView):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=SharedPromptSerializer(many=True),
                   description="Prompts others granted to you or to a team you are in.")
    def get(self, request):
        return paginated(request, self, prompts_shared_with(user=request.user),
                         ("-updated_at", "-created_at"),
                         lambda items: SharedPromptSerializer(items, many=True).data)
