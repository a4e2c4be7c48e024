from django.urls import path

from . import api

E = "webhooks/<uuid:endpoint_id>"

urlpatterns = [
    path("webhooks", api.EndpointListApi.as_view(), name="api-webhooks"),
    path(E, api.EndpointDetailApi.as_view(), name="api-webhook"),
    path(f"{E}/rotate-secret", api.EndpointRotateApi.as_view(), name="api-webhook-rotate"),
    path(f"{E}/deliveries", api.DeliveryListApi.as_view(), name="api-webhook-deliveries"),
    path(f"{E}/deliveries/<uuid:delivery_id>/redeliver", api.RedeliverApi.as_view(),
         name="api-webhook-redeliver"),
]
