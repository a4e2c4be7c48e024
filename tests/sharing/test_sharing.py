"""Sharing behaviours: pinned links, forks, transfer, the audit trail, team
membership, the share-link page."""

from datetime import timedelta

from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import services as account_services
from playground.models import Prompt
from sharing import services as sharing
from sharing.models import AuditEvent, ShareLink
from sharing.tokens import token_hash
from tests.factories import PASSWORD, PromptFactory, UserFactory
from tests.sharing.conftest import make_version


def _owner_client(world):
    client = APIClient()
    client.force_login(world.owner)
    return client


def test_should_show_token_once_and_store_only_its_hash(world):
    client = _owner_client(world)
    created = client.post(f"/api/prompts/{world.prompt.pk}/links", {"mode": "login", "name": "team"},
                          format="json").json()
    token = created["token"]
    assert token.startswith("pys_") and len(token) >= 4 + 22  # >= 128 bits after the prefix
    assert created["url"].endswith(f"/s/{token}")
    row = ShareLink.objects.get(pk=created["id"])
    assert row.token_hash == token_hash(token)
    assert token not in str(ShareLink.objects.filter(pk=row.pk).values().first())
    listed = client.get(f"/api/prompts/{world.prompt.pk}/links").json()["results"]
    assert all("token" not in item for item in listed)


def test_should_limit_a_pinned_link_to_its_version(world):
    link, token = sharing.link_create(prompt=world.prompt, actor=world.owner, mode="public",
                                      version_id=world.v1.pk)
    anon = APIClient(HTTP_X_SHARE_TOKEN=token)
    base = f"/api/prompts/{world.prompt.pk}"
    assert anon.get(base).status_code == 200
    assert anon.get(f"{base}/versions/{world.v1.pk}").status_code == 200
    body = anon.get(f"{base}/versions/{world.v1.pk}/body")
    assert b"".join(body.streaming_content) == b"Hello {{name}}!\n"
    assert anon.get(f"{base}/versions/{world.v2.pk}").status_code == 404
    assert anon.get(f"{base}/versions/{world.v2.pk}/body").status_code == 404
    assert anon.get(f"{base}/versions").json()["error"]["code"] == "forbidden"
    page = Client().get(f"/s/{token}")
    assert page.status_code == 200 and "Hello {{name}}!" in page.content.decode()
    assert "again" not in page.content.decode()
    assert page["Referrer-Policy"] == "no-referrer" and page["Cache-Control"] == "no-store"


def test_should_fork_a_viewed_version_into_the_viewers_library(world):
    viewer = world.client("viewer")
    response = viewer.post(f"/api/prompts/{world.prompt.pk}/fork", {"version": str(world.v1.pk)},
                           format="json")
    assert response.status_code == 201
    fork = Prompt.objects.get(pk=response.json()["id"])
    assert fork.owner == world.users["viewer"]
    assert (fork.forked_from_prompt_id, fork.forked_from_version_id) == (world.prompt.pk, world.v1.pk)
    copy = fork.versions.get()
    assert copy.body_sha256 == world.v1.body_sha256 and copy.variables == world.v1.variables
    # The fork is the viewer's own: they can edit it; the source is unchanged.
    edit = {"parent": str(copy.pk), "body": "mine", "model": "fixed-cost"}
    assert viewer.post(f"/api/prompts/{fork.pk}/versions", edit, format="json").status_code == 201
    assert world.prompt.versions.count() == 2
    assert AuditEvent.objects.filter(prompt_id=world.prompt.pk, action="prompt.fork").exists()


def test_should_transfer_ownership_and_keep_the_old_owner_as_editor(world):
    client = _owner_client(world)
    new_owner = world.users["viewer"]  # had a viewer grant, which ownership supersedes
    response = client.post(f"/api/prompts/{world.prompt.pk}/transfer", {"username": new_owner.username},
                           format="json")
    assert response.status_code == 202, response.json()
    world.prompt.refresh_from_db()
    assert world.prompt.owner == world.owner  # an offer, until the receiver accepts
    receiver = world.client("viewer")
    offers = receiver.get("/api/prompts/transfers").json()
    assert [(o["id"], o["from_user"]) for o in offers] == [(response.json()["id"], world.owner.username)]
    assert client.post(f"/api/prompts/transfers/{offers[0]['id']}", {"accept": True},
                       format="json").status_code == 404  # only the receiver answers
    accepted = receiver.post(f"/api/prompts/transfers/{offers[0]['id']}", {"accept": True}, format="json")
    assert accepted.status_code == 200 and accepted.json()["owner"] == new_owner.username
    world.prompt.refresh_from_db()
    assert world.prompt.owner == new_owner
    assert client.post(f"/api/prompts/{world.prompt.pk}/links", {"mode": "public"},
                       format="json").status_code == 403  # now only an editor
    assert client.get(f"/api/prompts/{world.prompt.pk}/audit").status_code == 200
    assert world.client("viewer").get(f"/api/prompts/{world.prompt.pk}/links").status_code == 200


def test_should_leave_the_owner_in_place_when_a_transfer_is_declined_or_void(world):
    client = _owner_client(world)
    url = f"/api/prompts/{world.prompt.pk}/transfer"
    declined = client.post(url, {"username": world.users["editor"].username}, format="json").json()
    void = client.post(url, {"username": world.users["viewer"].username}, format="json").json()
    answer = world.client("editor").post(f"/api/prompts/transfers/{declined['id']}", {"accept": False},
                                         format="json")
    assert answer.status_code == 200 and answer.json() == {"accepted": False}
    world.prompt.refresh_from_db()
    assert world.prompt.owner == world.owner
    # Once the prompt has changed hands another way, an older offer cannot move it.
    Prompt.objects.filter(pk=world.prompt.pk).update(owner=world.extra["bystander"])
    late = world.client("viewer").post(f"/api/prompts/transfers/{void['id']}", {"accept": True},
                                       format="json")
    assert late.status_code == 404 and late.json()["error"]["code"] == "transfer_not_found"
    world.prompt.refresh_from_db()
    assert world.prompt.owner == world.extra["bystander"]


def test_should_audit_every_share_grant_revoke_expiry_transfer_and_label_move(world):
    client = _owner_client(world)
    base = f"/api/prompts/{world.prompt.pk}"
    created = client.post(f"{base}/links", {"mode": "public", "name": "x"}, format="json",
                          HTTP_X_REQUEST_ID="req-create-1")
    assert created["X-Request-ID"] == "req-create-1"
    client.delete(f"{base}/links/{created.json()['id']}")
    client.delete(f"{base}/grants/{world.grants['viewer'].pk}")
    past = timezone.now() - timedelta(seconds=1)
    ShareLink.objects.filter(pk=world.links["login"].pk).update(expires_at=past)
    client.post(f"{base}/labels/production/move", {"version": str(world.v1.pk), "expected": str(world.v2.pk)},
                format="json")
    # A failed compare-and-set moves nothing and audits nothing.
    failed = client.post(f"{base}/labels/production/move",
                         {"version": str(world.v2.pk), "expected": str(world.v2.pk)}, format="json")
    assert failed.status_code == 409
    offer = client.post(f"{base}/transfer", {"username": world.extra["bystander"].username}, format="json")
    bystander = APIClient()
    bystander.force_login(world.extra["bystander"])
    bystander.post(f"/api/prompts/transfers/{offer.json()['id']}", {"accept": True}, format="json")

    events = client.get(f"{base}/audit?page_size=200").json()["results"]
    actions = [e["action"] for e in events]
    for action in ("link.create", "link.revoke", "link.expire", "grant.create", "grant.revoke",
                   "label.move", "label.undo",
                   "prompt.transfer_offer", "prompt.transfer"):
        assert action in actions, action
    assert actions.count("link.expire") == 1
    assert actions.count("label.move") == 5  # 4 in the fixture + 1 here; the failed CAS left none
    first = next(e for e in events if e["action"] == "link.create" and e["detail"]["name"] == "x")
    assert first["request_id"] == "req-create-1" and first["actor"] == world.owner.username
    # Listing again does not audit the same expiry twice.
    again = client.get(f"{base}/audit?page_size=200").json()["results"]
    assert [e["action"] for e in again].count("link.expire") == 1


def test_should_show_audit_to_editors_but_not_viewers(world):
    base = f"/api/prompts/{world.prompt.pk}/audit"
    assert world.client("editor").get(base).status_code == 200
    assert world.client("team_editor").get(base).status_code == 200
    assert world.client("viewer").get(base).status_code == 403


def test_should_give_access_the_moment_someone_joins_a_team(world):
    newcomer = UserFactory()
    client = APIClient()
    client.force_login(newcomer)
    url = f"/api/prompts/{world.prompt.pk}"
    assert client.get(url).status_code == 404
    account_services.team_member_add(team=world.teams["team_editor"], user=newcomer)
    move = {"version": str(world.v1.pk), "expected": str(world.v2.pk)}
    assert client.post(f"{url}/labels/production/move", move, format="json").status_code == 200


def test_should_send_a_signed_out_login_link_holder_to_login_and_back(world):
    browser = Client()
    link_url = f"/s/{world.tokens['login']}"
    first = browser.get(link_url)
    assert first.status_code == 302 and first["Location"] == f"/login/?next={link_url}"
    user = world.users["stranger"]
    logged_in = browser.post(first["Location"], {"username": user.username, "password": PASSWORD})
    assert logged_in.status_code == 302 and logged_in["Location"] == link_url
    page = browser.get(link_url)
    assert page.status_code == 200 and "Shared prompt" in page.content.decode()


def test_should_escape_prompt_text_on_the_share_page(db):
    owner = UserFactory()
    prompt = PromptFactory(owner=owner, title="<script>alert(1)</script>")
    make_version(prompt, body="<img src=x onerror=alert(2)>")
    _, token = sharing.link_create(prompt=prompt, actor=owner, mode="public")
    html = Client().get(f"/s/{token}").content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "<img src=x" not in html and "&lt;img src=x" in html


def test_should_list_shared_prompts_with_role_and_not_owned_ones(world):
    own = PromptFactory(owner=world.users["team_editor"])
    results = world.client("team_editor").get("/api/prompts/shared").json()["results"]
    assert [(r["id"], r["role"], r["owner"]) for r in results] == [
        (str(world.prompt.pk), "editor", world.owner.username)]
    assert str(own.pk) not in [r["id"] for r in results]


def test_should_change_role_when_granting_the_same_user_again(world):
    client = _owner_client(world)
    again = client.post(f"/api/prompts/{world.prompt.pk}/grants",
                        {"username": world.users["viewer"].username, "role": "editor"}, format="json")
    assert again.status_code == 201 and again.json()["id"] == world.grants["viewer"].pk
    assert world.client("viewer").post(f"/api/prompts/{world.prompt.pk}/labels/production/undo", {},
                                       format="json").status_code == 200


def test_should_cap_presigned_body_urls_at_the_60_second_stale_window(world, settings):
    settings.PRESIGN_GET_EXPIRES = 600  # a misconfiguration must not widen the window
    response = world.client("public_out").get(
        f"/api/prompts/{world.prompt.pk}/versions/{world.v2.pk}/body?presign=1")
    assert response.status_code == 200 and response.json()["expires_in"] == 60


def test_should_let_only_the_owner_cache_a_body(world):
    """Anyone else's copy would outlive a revocation in their browser's cache."""
    url = f"/api/prompts/{world.prompt.pk}/versions/{world.v2.pk}/body"
    assert "immutable" in world.client("owner").get(url)["Cache-Control"]
    for principal in ("viewer", "team_viewer", "public_out"):
        response = world.client(principal).get(url)
        assert response.status_code == 200, principal
        assert response["Cache-Control"] == "no-store", principal
