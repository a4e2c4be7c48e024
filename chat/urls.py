from django.contrib.auth.decorators import login_required
from django.urls import path
from django.views.generic import TemplateView

from core.routes import api_routes

from . import api

api_urls = api_routes(
    ("messages",                                     api.SendApi,             "chat-send"),
    ("messages/<int:message_id>",                    api.MessageApi,          "chat-message"),
    ("unread",                                       api.UnreadApi,           "chat-unread"),
    ("search",                                       api.SearchApi,           "chat-search"),
    ("people",                                       api.PeopleApi,           "chat-people"),
    ("conversations",                                api.ConversationListApi, "chat-conversations"),
    ("conversations/<int:conversation_id>/messages", api.HistoryApi,          "chat-history"),
    ("conversations/<int:conversation_id>/read",     api.ReadApi,             "chat-read"),
    ("blocks",                                       api.BlockApi,            "chat-block"),
    ("blocks/<int:user_id>",                         api.UnblockApi,          "chat-unblock"),
)

pages = [
    path("", login_required(TemplateView.as_view(template_name="chat/index.html")), name="chat"),
]
