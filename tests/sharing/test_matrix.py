"""Authorization matrix: every prompt endpoint and page x every principal x
access live / revoked / expired. The expected status of each cell follows
from the principal's role (none: 404, too weak: 403, else the endpoint's
success status); a failure names the exact cell."""

from dataclasses import dataclass

import pytest
from django.db import transaction

from sharing.kinds import Role
from tests.sharing.conftest import PRINCIPALS, SIGNED_IN, STATES, build_world

# 1,000 cells of the same permission queries on either database (tests/sharing/test_sharing.py
# runs on both profiles): once, in the services pass.
pytestmark = pytest.mark.any_profile


@pytest.fixture(scope="module")
def worlds(django_db_setup, django_db_blocker):
    """A world per state, built once for the module in a transaction rolled back
    at its end. Each cell runs in a savepoint inside it (the ``db`` fixture), so
    what a cell writes is undone before the next; the cache is emptied before
    each (tests/conftest.py)."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield {state: build_world(state) for state in STATES}
        transaction.set_rollback(True)


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str  # formatted with p (prompt id), v1, v2, link, grant
    need: Role
    ok: int
    body: object = None
    fork: bool = False


def _body(w, name):
    bodies = {
        "version-create": {"parent": str(w.v2.pk), "body": "edited", "model": "fixed-cost"},
        "render": {"variables": {"name": "Ada"}},
        "upload": {"size": 100_000},
        "label-move": {"version": str(w.v1.pk), "expected": str(w.v2.pk)},
        "label-review": {"version": str(w.v1.pk), "expected": str(w.v2.pk), "note": "why"},
        "link-create": {"mode": "public", "name": "new"},
        "grant-create": {"username": w.extra["bystander"].username, "role": "viewer"},
        "transfer": {"username": w.extra["bystander"].username},
        "fork": {"version": str(w.v2.pk)},
    }
    return bodies.get(name)


V = "/api/prompts/{p}/versions/{v2}"
ENDPOINTS = [
    Endpoint("prompt", "get", "/api/prompts/{p}", Role.LINK, 200),
    Endpoint("versions", "get", "/api/prompts/{p}/versions", Role.LINK, 200),
    Endpoint("version-create", "post", "/api/prompts/{p}/versions", Role.EDITOR, 201),
    Endpoint("version", "get", V, Role.LINK, 200),
    Endpoint("body", "get", V + "/body", Role.LINK, 200),
    Endpoint("body-presign", "get", V + "/body?presign=1", Role.LINK, 200),
    Endpoint("render", "post", V + "/render", Role.LINK, 200),
    Endpoint("tree", "get", "/api/prompts/{p}/tree", Role.LINK, 200),
    Endpoint("heads", "get", "/api/prompts/{p}/heads", Role.LINK, 200),
    Endpoint("diff", "get", "/api/prompts/{p}/diff?from={v1}&to={v2}", Role.LINK, 200),
    Endpoint("diff-fields", "get", "/api/prompts/{p}/diff/fields?from={v1}&to={v2}", Role.LINK, 200),
    Endpoint("upload", "post", "/api/prompts/{p}/uploads", Role.EDITOR, 201),
    Endpoint("history-export", "get", "/api/prompts/{p}/history-export", Role.LINK, 200),
    Endpoint("labels", "get", "/api/prompts/{p}/labels", Role.LINK, 200),
    Endpoint("label", "get", "/api/prompts/{p}/labels/production", Role.LINK, 200),
    Endpoint("label-move", "post", "/api/prompts/{p}/labels/production/move", Role.EDITOR, 200),
    Endpoint("label-undo", "post", "/api/prompts/{p}/labels/production/undo", Role.EDITOR, 200),
    Endpoint("label-redo", "post", "/api/prompts/{p}/labels/staging/redo", Role.EDITOR, 200),
    Endpoint("label-history", "get", "/api/prompts/{p}/labels/production/history", Role.LINK, 200),
    Endpoint("label-review", "post", "/api/prompts/{p}/labels/production/pending", Role.EDITOR, 202),
    Endpoint("pending-moves", "get", "/api/prompts/{p}/pending-moves", Role.LINK, 200),
    Endpoint("links", "get", "/api/prompts/{p}/links", Role.OWNER, 200),
    Endpoint("link-create", "post", "/api/prompts/{p}/links", Role.OWNER, 201),
    Endpoint("link-revoke", "delete", "/api/prompts/{p}/links/{link}", Role.OWNER, 200),
    Endpoint("grants", "get", "/api/prompts/{p}/grants", Role.OWNER, 200),
    Endpoint("grant-create", "post", "/api/prompts/{p}/grants", Role.OWNER, 201),
    Endpoint("grant-revoke", "delete", "/api/prompts/{p}/grants/{grant}", Role.OWNER, 200),
    Endpoint("transfer", "post", "/api/prompts/{p}/transfer", Role.OWNER, 202),  # an offer
    Endpoint("fork", "post", "/api/prompts/{p}/fork", Role.LINK, 201, fork=True),
    Endpoint("audit", "get", "/api/prompts/{p}/audit", Role.EDITOR, 200),
    # The generations log: accounts that may view the prompt; a link shows one version, not the log.
    Endpoint("generations", "get", "/api/prompts/{p}/generations", Role.VIEWER, 200),
    Endpoint("generation-metrics", "get", V + "/generation-metrics", Role.VIEWER, 200),
]

# The role each principal holds while its access is live.
LIVE_ROLE = {"owner": Role.OWNER, "editor": Role.EDITOR, "viewer": Role.VIEWER,
             "team_viewer": Role.VIEWER, "team_editor": Role.EDITOR, "public_in": Role.LINK,
             "public_out": Role.LINK, "login_in": Role.LINK, "login_out": Role.NONE, "stranger": Role.NONE,
             "anonymous": Role.NONE}


def role_of(principal: str, state: str) -> Role:
    if principal == "owner" or state == "active":
        return LIVE_ROLE[principal]
    return Role.NONE  # every revoked or expired grant, membership and link gives nothing


def expected_status(endpoint: Endpoint, principal: str, state: str) -> int:
    role = role_of(principal, state)
    if role == Role.NONE:
        return 404
    if role < endpoint.need:
        return 403
    if endpoint.fork and principal not in SIGNED_IN:
        return 401
    return endpoint.ok


def _path(w, endpoint: Endpoint) -> str:
    return endpoint.path.format(p=w.prompt.pk, v1=w.v1.pk, v2=w.v2.pk, link=w.extra["spare_link"].pk,
                                grant=w.extra["spare_grant"].pk)


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_prompt_endpoint_matrix(db, worlds, endpoint, principal, state):
    w = worlds[state]
    client = w.client(principal)
    response = getattr(client, endpoint.method)(_path(w, endpoint), _body(w, endpoint.name), format="json")
    want = expected_status(endpoint, principal, state)
    assert response.status_code == want, (endpoint.name, principal, state, response.content[:300])
    if want in (403, 404):
        # The stable error shape, and no hint about the prompt for strangers.
        code = response.json()["error"]["code"]
        assert code == ("forbidden" if want == 403 else "prompt_not_found")


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("principal", PRINCIPALS)
def test_prompt_lists_matrix(db, worlds, principal, state):
    """The library list and "shared with me" show a prompt to its account
    holders only: links are bearer secrets, not memberships."""
    w = worlds[state]
    client = w.client(principal)
    role = role_of(principal, state)
    library = client.get("/api/prompts/")
    shared = client.get("/api/prompts/shared")
    if principal not in SIGNED_IN:
        assert (library.status_code, shared.status_code) == (401, 401)
        return
    assert library.status_code == shared.status_code == 200
    in_library = str(w.prompt.pk) in [p["id"] for p in library.json()["results"]]
    in_shared = [p["role"] for p in shared.json()["results"] if p["id"] == str(w.prompt.pk)]
    assert in_library == (role >= Role.VIEWER)
    assert in_shared == ({Role.VIEWER: ["viewer"], Role.EDITOR: ["editor"]}.get(role) or [])


def _page_expectation(page: str, principal: str, state: str) -> int:
    role = role_of(principal, state)
    if page == "share-link":
        if principal not in ("public_in", "public_out", "login_in", "login_out"):
            return 404  # they hold no token: a made-up one
        if state != "active":
            return 404
        return 302 if principal == "login_out" else 200
    if principal not in SIGNED_IN:
        return 302  # to the login page
    if page == "shared-with-me":
        return 200
    # Prompt pages read no share token: link holders there are strangers.
    return 200 if role >= Role.VIEWER else 404


PAGES = ["share-link", "shared-with-me", "playground", "history"]


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("page", PAGES)
def test_page_matrix(db, worlds, page, principal, state):
    w = worlds[state]
    client = w.client(principal)
    if page == "share-link":
        token = w.tokens[TOKEN_FOR_PAGE[principal]] if principal in TOKEN_FOR_PAGE else "pys_" + "x" * 43
        url = f"/s/{token}"
    else:
        url = {"shared-with-me": "/prompts/shared/", "playground": f"/prompts/{w.prompt.pk}/",
               "history": f"/prompts/{w.prompt.pk}/history/"}[page]
    response = client.get(url)
    want = _page_expectation(page, principal, state)
    assert response.status_code == want, (page, principal, state)
    if want == 302:
        assert response["Location"] == f"/login/?next={url}"
    if page == "share-link" and want == 200:
        assert "Shared prompt" in response.content.decode()
    if page == "shared-with-me" and want == 200:
        listed = "Shared prompt" in response.content.decode()
        assert listed == (role_of(principal, state) in (Role.VIEWER, Role.EDITOR))


TOKEN_FOR_PAGE = {"public_in": "public", "public_out": "public", "login_in": "login", "login_out": "login"}
