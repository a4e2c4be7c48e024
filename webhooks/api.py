"""Webhook API (owner only): endpoints, secret rotation, the delivery log, redelivery.

    GET/POST /api/webhooks                      list / register {url, events, prompt?, description?}
    GET/DELETE /api/webhooks/<id>
    POST /api/webhooks/<id>/rotate-secret
    GET  /api/webhooks/<id>/deliveries
    POST /api/webhooks/<id>/deliveries/<delivery id>/redeliver
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.jsonbody import validated
from core.pagination import Page, paginated
from sharing.access import request_subject

from . import selectors, services
from .models import WebhookDelivery, WebhookEndpoint


class EndpointSerializer(serializers.ModelSerializer):
    prompt = serializers.UUIDField(source="prompt_id", allow_null=True, read_only=True)

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "events", "prompt", "description", "created_at", "secret_rotated_at"]


class EndpointWithSecretSerializer(EndpointSerializer):
    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "secret"]


class EndpointCreateSerializer(serializers.Serializer):
    url = serializers.CharField(trim_whitespace=False, allow_blank=True,
                                help_text="https URL on a public address")
    events = serializers.JSONField(help_text="A list of: version.created, label.moved, share.created, "
                                             "share.revoked, version.regressed")
    prompt = serializers.UUIDField(required=False, allow_null=True, default=None,
                                   help_text="One prompt you own; omitted: all of them")
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class DeliverySerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookDelivery
        fields = ["id", "event", "event_id", "status", "attempts", "response_code", "last_error",
                  "next_attempt_at", "created_at", "finished_at", "redelivery_of", "signature", "timestamp"]


class EndpointListApi(APIView):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=EndpointSerializer(many=True))
    def get(self, request):
        return paginated(request, self, selectors.endpoint_list(owner=request.user), ("-created_at",),
                         lambda items: EndpointSerializer(items, many=True).data)

    @extend_schema(request=EndpointCreateSerializer, responses={201: EndpointWithSecretSerializer},
                   description="The signing secret is in this response (and a rotation's) only.")
    def post(self, request):
        v = validated(EndpointCreateSerializer, request)
        prompt = None
        if v["prompt"] is not None:
            prompt = request_subject(request, "prompt", pk=v["prompt"], need="own", version_id=None)
        endpoint = services.endpoint_create(owner=request.user, url=v["url"], events=v["events"],
                                            prompt=prompt, description=v["description"])
        return Response(EndpointWithSecretSerializer(endpoint).data, status=status.HTTP_201_CREATED)


class EndpointDetailApi(APIView):
    @extend_schema(responses=EndpointSerializer)
    def get(self, request, endpoint_id):
        return Response(EndpointSerializer(selectors.endpoint_get(owner=request.user,
                                                                  endpoint_id=endpoint_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, endpoint_id):
        services.endpoint_delete(endpoint=selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointRotateApi(APIView):
    @extend_schema(request=None, responses=EndpointWithSecretSerializer,
                   description="A new secret for later events; pending deliveries keep their signature.")
    def post(self, request, endpoint_id):
        endpoint = selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id)
        return Response(EndpointWithSecretSerializer(services.endpoint_secret_rotate(endpoint=endpoint)).data)


class DeliveryListApi(APIView):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=DeliverySerializer(many=True), description="The delivery log, newest first.")
    def get(self, request, endpoint_id):
        endpoint = selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id)
        return paginated(request, self, selectors.delivery_list(endpoint=endpoint), ("-created_at",),
                         lambda items: DeliverySerializer(items, many=True).data)


class RedeliverApi(APIView):
    @extend_schema(request=None, responses={201: DeliverySerializer})
    def post(self, request, endpoint_id, delivery_id):
        endpoint = selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id)
        delivery = selectors.delivery_get(endpoint=endpoint, delivery_id=delivery_id)
        again = services.delivery_redeliver(delivery=delivery)
        return Response(DeliverySerializer(again).data, status=status.HTTP_201_CREATED)
