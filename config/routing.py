"""Websocket routes of every app, gathered in one place."""

from chat.routing import websocket_urlpatterns as chat_ws

websocket_urlpatterns: list = [*chat_ws]
