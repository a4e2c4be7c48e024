from django.urls import path

from inference_client import views

urlpatterns = [
    path("chat/completions", views.chat_completions, name="v1-chat-completions"),
    path("models", views.ModelListApi.as_view(), name="v1-models"),
    path("models/<str:model>", views.ModelDetailApi.as_view(), name="v1-model-detail"),
    path("usage", views.UsageApi.as_view(), name="v1-usage"),
]
