import pytest
from django.contrib.auth import get_user_model

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_signup_api_creates_a_user(api_client):
    response = api_client.post("/api/accounts/signup",
                               {"username": "ada", "password": "an-excellent-passphrase"}, format="json")
    assert response.status_code == 201
    assert get_user_model().objects.filter(username="ada").exists()


def test_signup_with_a_taken_username_names_the_field(api_client):
    UserFactory(username="taken")
    response = api_client.post("/api/accounts/signup",
                               {"username": "Taken", "password": "an-excellent-passphrase"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] | {"details": None} == {
        "code": "username_taken", "message": "The username 'Taken' is taken.", "field": "username",
        "type": "invalid_request_error", "param": "username", "details": None}


def test_signup_with_a_weak_password_says_why(api_client):
    response = api_client.post("/api/accounts/signup", {"username": "bob", "password": "123"}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "weak_password" and error["field"] == "password"
    assert "too short" in error["message"]


def test_signup_page_shows_the_error_and_keeps_the_username(client):
    response = client.post("/signup/", {"username": "carol", "password": "123"})
    assert response.status_code == 400
    assert b"too short" in response.content and b'value="carol"' in response.content
    assert not get_user_model().objects.filter(username="carol").exists()


def test_signup_page_logs_the_new_user_in(client):
    response = client.post("/signup/", {"username": "dave", "password": "an-excellent-passphrase"})
    assert response.status_code == 302
    assert client.get("/").context["user"].username == "dave"


@pytest.mark.parametrize(("target", "lands"), [
    ("https://evil.example/", "/"), ("//evil.example/x", "/"), ("/prompts/", "/prompts/")])
def test_signup_redirects_only_within_the_site(client, target, lands):
    response = client.post(f"/signup/?next={target}", {"username": "erin",
                                                       "password": "an-excellent-passphrase"})
    assert response.status_code == 302 and response["Location"] == lands


def test_login_page_logs_in(client):
    user = UserFactory()
    response = client.post("/login/", {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/settings/api-keys/").status_code == 200


def test_team_owner_invites_the_invitee_accepts_and_the_owner_removes(auth_client, user, api_client):
    team = auth_client.post("/api/accounts/teams", {"name": "core"}, format="json").json()
    assert team["owner"] == user.username and team["members"] == [user.username]
    member = UserFactory()
    invited = auth_client.post(f"/api/accounts/teams/{team['id']}/members", {"username": member.username},
                               format="json")
    assert invited.status_code == 202 and invited.json()["username"] == member.username
    assert auth_client.get("/api/accounts/teams").json()[0]["members"] == [user.username]  # not yet
    api_client.force_login(member)
    waiting = api_client.get("/api/accounts/invitations").json()
    assert [(i["team_name"], i["invited_by"]) for i in waiting] == [("core", user.username)]
    # Only the invitee answers: to the owner, the invitation does not exist.
    assert auth_client.post(f"/api/accounts/invitations/{waiting[0]['id']}", {"accept": True},
                            format="json").status_code == 404
    joined = api_client.post(f"/api/accounts/invitations/{waiting[0]['id']}", {"accept": True}, format="json")
    assert joined.status_code == 200 and joined.json() == {"team": team["id"], "joined": True}
    assert api_client.get("/api/accounts/invitations").json() == []
    removed = auth_client.delete(f"/api/accounts/teams/{team['id']}/members",
                                 {"username": member.username}, format="json").json()
    assert removed["members"] == [user.username]


def test_should_join_no_team_on_a_declined_invitation(auth_client, user, api_client):
    from accounts import services

    team = services.team_create(owner=user, name="core")
    invitee = UserFactory()
    invitation = services.team_invite(team=team, user=invitee, invited_by=user)
    api_client.force_login(invitee)
    declined = api_client.post(f"/api/accounts/invitations/{invitation.pk}", {"accept": False}, format="json")
    assert declined.status_code == 200 and declined.json()["joined"] is False
    assert not team.members.filter(pk=invitee.pk).exists()


def test_should_let_a_member_leave_but_not_the_owner(auth_client, user, api_client):
    from accounts import services

    team = services.team_create(owner=user, name="core")
    member = UserFactory()
    services.team_member_add(team=team, user=member)
    api_client.force_login(member)
    assert api_client.delete(f"/api/accounts/teams/{team.pk}/membership").status_code == 204
    assert not team.members.filter(pk=member.pk).exists()
    assert api_client.delete(f"/api/accounts/teams/{team.pk}/membership").status_code == 404  # not a member
    owner_leaves = auth_client.delete(f"/api/accounts/teams/{team.pk}/membership")
    assert owner_leaves.status_code == 400 and owner_leaves.json()["error"]["code"] == "owner_cannot_leave"


def test_non_owner_cannot_manage_a_team(auth_client, api_client):
    team = auth_client.post("/api/accounts/teams", {"name": "core"}, format="json").json()
    stranger = UserFactory()
    api_client.force_login(stranger)
    response = api_client.post(f"/api/accounts/teams/{team['id']}/members", {"username": stranger.username},
                               format="json")
    assert response.status_code == 404


def test_should_throttle_failed_logins_per_address_with_retry_after(settings):
    from django.test import Client

    settings.AXES_FAILURE_LIMIT = 3
    user = UserFactory()
    stuffer = Client(REMOTE_ADDR="203.0.113.7")
    for i in range(3):  # the third failure is the last: it locks
        wrong = {"username": user.username, "password": f"guess-{i}"}
        assert stuffer.post("/login/", wrong).status_code == (429 if i == 2 else 200)
    locked = stuffer.post("/login/", {"username": user.username, "password": PASSWORD})
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    assert b"Too many failed logins" in locked.content
    # Other usernames from that address wait too (credential stuffing), other addresses do not.
    other_user = UserFactory()
    assert stuffer.post("/login/", {"username": other_user.username, "password": PASSWORD}).status_code == 429
    elsewhere = Client(REMOTE_ADDR="198.51.100.9")
    assert elsewhere.post("/login/", {"username": user.username, "password": PASSWORD}).status_code == 302


def test_should_throttle_signups_per_address_with_retry_after(settings):
    from rest_framework.test import APIClient

    settings.SIGNUP_LIMIT = 2
    good = "an-excellent-passphrase"
    farm = APIClient(REMOTE_ADDR="203.0.113.8")
    for name in ("farm1", "farm2"):
        response = farm.post("/api/accounts/signup", {"username": name, "password": good}, format="json")
        assert response.status_code == 201
    refused = farm.post("/api/accounts/signup", {"username": "farm3", "password": "an-excellent-passphrase"},
                        format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json()["error"]["code"] == "too_many_signups"
    page = farm.post("/signup/", {"username": "farm4", "password": "an-excellent-passphrase"})
    assert page.status_code == 429 and b"Too many new accounts" in page.content
    assert not get_user_model().objects.filter(username__in=["farm3", "farm4"]).exists()
    elsewhere = APIClient(REMOTE_ADDR="198.51.100.9")
    assert elsewhere.post("/api/accounts/signup", {"username": "someone", "password": good},
                          format="json").status_code == 201
