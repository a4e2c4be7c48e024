from django.contrib.auth import views as auth_views
from django.urls import path

from core.routes import api_routes

from . import api, views

pages = [
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("signup/", views.signup, name="signup"),
]

api_urls = api_routes(
    ("signup",                          api.SignupApi,         "api-signup"),
    ("me",                              api.MeApi,             "api-me"),
    ("keys",                            api.ApiKeyListApi,     "api-keys-list"),
    ("keys/<int:key_id>",               api.ApiKeyDetailApi,   "api-key-detail"),
    ("teams",                           api.TeamListApi,       "api-teams"),
    ("teams/<int:team_id>/members",     api.TeamMemberApi,     "api-team-members"),
    ("invitations",                     api.InvitationListApi, "api-invitations"),
    ("invitations/<int:invitation_id>", api.InvitationApi,     "api-invitation"),
    ("teams/<int:team_id>/membership",  api.TeamMembershipApi, "api-team-membership"),
)
