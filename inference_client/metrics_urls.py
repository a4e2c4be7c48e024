from django.urls import path

from inference_client.views import metrics_view

urlpatterns = [path("", metrics_view, name="metrics")]
