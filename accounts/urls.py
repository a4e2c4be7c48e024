from django.contrib.auth import views as auth_views
from django.urls import path

from . import api, views

pages = [
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("signup/", views.signup, name="signup"),
]

api_urls = [
    path("signup", api.SignupApi.as_view(), name="api-signup"),
    path("me", api.MeApi.as_view(), name="api-me"),
    path("keys", api.ApiKeyListApi.as_view(), name="api-keys-list"),
    path("keys/<int:key_id>", api.ApiKeyDetailApi.as_view(), name="api-key-detail"),
    path("teams", api.TeamListApi.as_view(), name="api-teams"),
    path("teams/<int:team_id>/members", api.TeamMemberApi.as_view(), name="api-team-members"),
    path("invitations", api.InvitationListApi.as_view(), name="api-invitations"),
    path("invitations/<int:invitation_id>", api.InvitationApi.as_view(), name="api-invitation"),
    path("teams/<int:team_id>/membership", api.TeamMembershipApi.as_view(), name="api-team-membership"),
]
