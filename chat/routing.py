from django.urls import path

from .consumers import ChatConsumer
from .unread import UnreadConsumer

websocket_urlpatterns = [
    path("ws/chat/", ChatConsumer.as_asgi()),
    path("ws/chat/unread/", UnreadConsumer.as_asgi()),
]
