"""HTTP API for chat: thin views over services and selectors."""

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from core.ids import parse_uint
from core.jsonbody import validated

from . import selectors, services
from .serializers import BlockSerializer, EditSerializer, ReadSerializer, SendSerializer


def _query_int(request, name: str, default: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    value = parse_uint(raw)
    if value is None:
        raise DomainError(f"`{name}` must be a non-negative integer.", code="invalid_request", field=name)
    return value


class SendApi(APIView):
    @extend_schema(request=SendSerializer, responses={201: None, 200: None})
    def post(self, request):
        data = validated(SendSerializer, request)
        msg, created = services.message_send(sender=request.user, recipient_id=data["to"],
                                             client_msg_id=data["client_msg_id"], body=data["body"])
        return Response(dict(selectors.message_payload(msg), duplicate=not created),
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MessageApi(APIView):
    """PATCH {"body"}: edit your own message; DELETE: delete it (a tombstone).
    Both answer with the message as it now is."""

    @extend_schema(request=EditSerializer, responses={200: None})
    def patch(self, request, message_id):
        data = validated(EditSerializer, request)
        msg = services.message_edit(user=request.user, message_id=message_id, body=data["body"])
        return Response(selectors.message_payload(msg))

    @extend_schema(responses={200: None})
    def delete(self, request, message_id):
        return Response(selectors.message_payload(services.message_delete(user=request.user,
                                                                          message_id=message_id)))


class UnreadApi(APIView):
    """Unread messages in total and per conversation (the navigation badge)."""

    @extend_schema(responses={200: None})
    def get(self, request):
        return Response(selectors.unread_summary(user_id=request.user.pk))


# Words, not only spaces, and no NUL (selectors.message_search and people_find refuse those).
QUERY = OpenApiParameter("q", {"type": "string", "pattern": "^[^\\x00]*\\S[^\\x00]*$"}, required=True)


class SearchApi(APIView):
    """`?q=`: messages in your conversations (selectors.message_search)."""

    @extend_schema(parameters=[QUERY], responses={200: None})
    def get(self, request):
        return Response({"results": selectors.message_search(user=request.user,
                                                             query=request.query_params.get("q"))})


class PeopleApi(APIView):
    """`?q=`: people to start a chat with (selectors.people_find)."""

    @extend_schema(parameters=[QUERY], responses={200: None})
    def get(self, request):
        found = selectors.people_find(user=request.user, query=request.query_params.get("q"))
        return Response({"results": found})


class ConversationListApi(APIView):
    @extend_schema(responses={200: None})
    def get(self, request):
        return Response({"results": selectors.conversation_list(user=request.user),
                         "blocked": selectors.blocked_ids(user=request.user)})


class HistoryApi(APIView):
    """Newest first; `before=<seq>` pages back; `next_before` is null at the start."""

    @extend_schema(responses={200: None})
    def get(self, request, conversation_id):
        conv = selectors.access_conversation(user=request.user, conversation_id=conversation_id)
        limit = min(_query_int(request, "limit", settings.CHAT_HISTORY_PAGE) or 1,
                    settings.CHAT_HISTORY_MAX_PAGE)
        before = _query_int(request, "before", None)
        results = selectors.message_history(conversation=conv, before=before, limit=limit)
        more = bool(results) and results[-1]["seq"] > 1
        return Response({"results": results, "next_before": results[-1]["seq"] if more else None,
                         "peer_read_upto": selectors.peer_read_upto(
                             conversation=conv, reader_id=conv.peer_id(request.user.pk))})


class ReadApi(APIView):
    @extend_schema(request=ReadSerializer, responses={200: None})
    def post(self, request, conversation_id):
        data = validated(ReadSerializer, request)
        count = services.conversation_mark_read(user=request.user, conversation_id=conversation_id,
                                                upto=data["upto"])
        return Response({"marked": count})


class BlockApi(APIView):
    @extend_schema(request=BlockSerializer, responses={201: None})
    def post(self, request):
        data = validated(BlockSerializer, request)
        services.block_create(blocker=request.user, blocked_id=data["user"])
        return Response({"blocked": data["user"]}, status=status.HTTP_201_CREATED)


class UnblockApi(APIView):
    @extend_schema(responses={204: None})
    def delete(self, request, user_id):
        services.block_delete(blocker=request.user, blocked_id=user_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
