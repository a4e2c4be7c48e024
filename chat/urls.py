from django.contrib.auth.decorators import login_required
from django.urls import path
from django.views.generic import TemplateView

from . import api

api_urls = [
    path("messages", api.SendApi.as_view(), name="chat-send"),
    path("messages/<int:message_id>", api.MessageApi.as_view(), name="chat-message"),
    path("unread", api.UnreadApi.as_view(), name="chat-unread"),
    path("search", api.SearchApi.as_view(), name="chat-search"),
    path("people", api.PeopleApi.as_view(), name="chat-people"),
    path("conversations", api.ConversationListApi.as_view(), name="chat-conversations"),
    path("conversations/<int:conversation_id>/messages", api.HistoryApi.as_view(), name="chat-history"),
    path("conversations/<int:conversation_id>/read", api.ReadApi.as_view(), name="chat-read"),
    path("blocks", api.BlockApi.as_view(), name="chat-block"),
    path("blocks/<int:user_id>", api.UnblockApi.as_view(), name="chat-unblock"),
]

pages = [
    path("", login_required(TemplateView.as_view(template_name="chat/index.html")), name="chat"),
]
