"""Bad input to sharing: tokens that must all look the same, grants and links
that make no sense, and token guessing."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import services as account_services
from sharing import services as sharing
from sharing.models import ShareLink
from sharing.tokens import token_hash
from tests.factories import PromptFactory, UserFactory
from tests.sharing.conftest import make_version


@pytest.fixture
def owner_client(world):
    client = APIClient()
    client.force_login(world.owner)
    return client


def _bad_tokens(world) -> dict:
    owner, prompt = world.owner, world.prompt
    _, expired = sharing.link_create(prompt=prompt, actor=owner, mode="public")
    ShareLink.objects.filter(token_hash=token_hash(expired)).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    link, revoked = sharing.link_create(prompt=prompt, actor=owner, mode="public")
    sharing.link_revoke(prompt=prompt, link_id=link.pk, actor=owner)
    return {"malformed": "not-a-token", "unknown": "pys_" + "A" * 43, "expired": expired, "revoked": revoked,
            "empty": ""}


def test_should_answer_malformed_unknown_expired_and_revoked_tokens_identically(world):
    anon = APIClient()
    answers = set()
    for kind, token in _bad_tokens(world).items():
        api = anon.get(f"/api/prompts/{world.prompt.pk}", HTTP_X_SHARE_TOKEN=token)
        assert api.status_code == 404, kind
        body = api.json()
        body["error"].pop("request_id", None)
        answers.add((api.status_code, str(body)))
        if token:
            page = anon.get(f"/s/{token}")
            assert page.status_code == 404, kind
            answers.add((page.status_code, page.content.decode().replace(token, "TOKEN")))
    assert len(answers) == 2, answers  # one API answer, one page answer, whatever the reason


def test_should_rate_limit_token_guessing_per_client_address(world, settings):
    settings.SHARE_TOKEN_MAX_FAILURES = 3
    guesser = APIClient(REMOTE_ADDR="203.0.113.7")
    url = f"/api/prompts/{world.prompt.pk}"
    for i in range(3):
        assert guesser.get(url, HTTP_X_SHARE_TOKEN=f"pys_{i:043d}").status_code == 404
    limited = guesser.get(url, HTTP_X_SHARE_TOKEN="pys_" + "B" * 43)
    assert limited.status_code == 429
    assert int(limited["Retry-After"]) > 0
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"
    # A valid token is never refused, even from that address, on the API and on the page...
    assert guesser.get(url, HTTP_X_SHARE_TOKEN=world.tokens["public"]).status_code == 200
    assert guesser.get(f"/s/{world.tokens['public']}").status_code == 200
    page = guesser.get("/s/pys_" + "C" * 43)
    assert page.status_code == 429 and int(page["Retry-After"]) > 0
    # ...and another address is unaffected.
    other = APIClient(REMOTE_ADDR="198.51.100.9")
    assert other.get(url, HTTP_X_SHARE_TOKEN="pys_" + "D" * 43).status_code == 404


def test_should_limit_the_client_behind_a_trusted_proxy_not_the_proxy(world, settings):
    settings.SHARE_TOKEN_MAX_FAILURES = 3
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    url = f"/api/prompts/{world.prompt.pk}"
    balancer = APIClient(REMOTE_ADDR="10.1.2.3")

    def via(client_addr, token, spoofed=""):
        chain = f"{spoofed}, {client_addr}" if spoofed else client_addr
        return balancer.get(url, HTTP_X_SHARE_TOKEN=token, HTTP_X_FORWARDED_FOR=chain).status_code

    # A guesser that also forges X-Forwarded-For is still counted on its own address.
    for i in range(3):
        assert via("203.0.113.7", f"pys_{i:043d}", spoofed=f"192.0.2.{i}") == 404
    assert via("203.0.113.7", "pys_" + "B" * 43) == 429
    # Everyone else behind the same balancer is unaffected, link holders first.
    assert via("198.51.100.9", "pys_" + "E" * 43) == 404
    assert via("198.51.100.10", world.tokens["public"]) == 200
    # From an untrusted peer the header counts for nothing: the peer is the client.
    direct = APIClient(REMOTE_ADDR="203.0.113.99")
    for i in range(3):
        direct.get(url, HTTP_X_SHARE_TOKEN=f"pys_{i:043d}", HTTP_X_FORWARDED_FOR=f"192.0.2.{50 + i}")
    assert direct.get(url, HTTP_X_SHARE_TOKEN="pys_" + "F" * 43,
                      HTTP_X_FORWARDED_FOR="192.0.2.99").status_code == 429


@pytest.mark.parametrize("payload, status, code, field", [
    ({"username": "nobody-by-this-name", "role": "viewer"}, 404, "user_not_found", "username"),
    ({"team": 987654321, "role": "viewer"}, 404, "team_not_found", "team"),
    ({"username": "{viewer}", "role": "owner"}, 400, "invalid_role", "role"),
    ({"role": "viewer"}, 400, "grantee_required", "username"),
    ({"username": "{viewer}", "team": 1, "role": "viewer"}, 400, "grantee_required", "username"),
    ({"username": "{owner}", "role": "editor"}, 400, "already_owner", "username"),
    ({"username": "{viewer}", "role": "viewer", "expires_at": "2001-01-01T00:00:00Z"}, 400, "invalid_expiry",
     "expires_at"),
    ({"username": "{viewer}", "role": "viewer", "expires_at": "soon"}, 400, "invalid_request", "expires_at"),
])
def test_should_reject_bad_grants_with_a_code(world, owner_client, payload, status, code, field):
    payload = {k: v.format(viewer=world.users["viewer"].username, owner=world.owner.username)
               if isinstance(v, str) else v for k, v in payload.items()}
    response = owner_client.post(f"/api/prompts/{world.prompt.pk}/grants", payload, format="json")
    assert response.status_code == status, response.json()
    error = response.json()["error"]
    assert (error["code"], error["field"]) == (code, field)


@pytest.mark.parametrize("payload, code, field", [
    ({"mode": "public", "role": "editor"}, "invalid_mode", "role"),
    ({"mode": "editor"}, "invalid_mode", "mode"),
    ({"mode": "public", "expires_at": "2001-01-01T00:00:00Z"}, "invalid_expiry", "expires_at"),
    ({"mode": "public", "name": "x" * 101}, "invalid_request", "name"),
    ({"mode": "public", "version": "{foreign}"}, "version_not_found", "version"),
])
def test_should_reject_bad_links_with_a_code(world, owner_client, payload, code, field):
    foreign = make_version(PromptFactory())
    payload = {k: v.format(foreign=foreign.pk) for k, v in payload.items()}
    response = owner_client.post(f"/api/prompts/{world.prompt.pk}/links", payload, format="json")
    assert response.status_code == (404 if code == "version_not_found" else 400), response.json()
    error = response.json()["error"]
    assert (error["code"], error["field"]) == (code, field)
    assert ShareLink.objects.filter(prompt=world.prompt).count() == 3  # nothing created


@pytest.mark.parametrize("principal, status, code", [
    ("editor", 403, "forbidden"), ("viewer", 403, "forbidden"), ("public_in", 403, "forbidden"),
    ("stranger", 404, "prompt_not_found"), ("anonymous", 404, "prompt_not_found"),
])
def test_should_refuse_sharing_by_anyone_but_the_owner(world, principal, status, code):
    client = world.client(principal)
    for path, payload in (("links", {"mode": "public"}),
                          ("grants", {"username": world.extra["bystander"].username, "role": "editor"}),
                          ("transfer", {"username": world.extra["bystander"].username})):
        response = client.post(f"/api/prompts/{world.prompt.pk}/{path}", payload, format="json")
        assert response.status_code == status, (path, response.json())
        assert response.json()["error"]["code"] == code


def test_should_reject_bad_transfers(world, owner_client):
    url = f"/api/prompts/{world.prompt.pk}/transfer"
    unknown = owner_client.post(url, {"username": "ghost"}, format="json")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "user_not_found")
    to_self = owner_client.post(url, {"username": world.owner.username}, format="json")
    assert (to_self.status_code, to_self.json()["error"]["code"]) == (400, "already_owner")


def test_should_return_404_for_revoking_another_prompts_link_or_grant(world, owner_client):
    other_owner = UserFactory()
    other = PromptFactory(owner=other_owner)
    link, _ = sharing.link_create(prompt=other, actor=other_owner, mode="public")
    grant = sharing.grant_create(prompt=other, actor=other_owner, role="viewer",
                                 username=world.owner.username)
    base = f"/api/prompts/{world.prompt.pk}"
    assert owner_client.delete(f"{base}/links/{link.pk}").json()["error"]["code"] == "link_not_found"
    assert owner_client.delete(f"{base}/grants/{grant.pk}").json()["error"]["code"] == "grant_not_found"
    link.refresh_from_db()
    assert link.revoked_at is None


def test_should_grant_only_to_a_team_the_granter_is_in(world, owner_client):
    outsiders = account_services.team_create(owner=UserFactory(), name="Secret project")
    response = owner_client.post(f"/api/prompts/{world.prompt.pk}/grants", {"team": outsiders.pk,
                                                                            "role": "viewer"}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "team_not_found"
    assert "Secret project" not in response.content.decode()
    from sharing.models import Grant

    assert not Grant.objects.filter(team=outsiders).exists()
