"""playground.actions against the API: for each seat and action, the call the
page's control makes succeeds exactly when the table gives the seat that action
(a page never offers what the API refuses, nor hides what it allows), and the
docs' role table is the table's."""

import pytest
from django.contrib.auth.models import AnonymousUser

from playground import actions
from playground.actions import ACTIONS, Action, Seat, seat_of
from playground.permissions import access_prompt
from tests.sharing.conftest import SIGNED_IN, build_world

pytestmark = pytest.mark.any_profile

# The principal of tests/sharing/conftest.py's world who sits in each seat.
PRINCIPAL = {Seat.OWNER: "owner", Seat.EDITOR: "editor", Seat.VIEWER: "viewer", Seat.LINK: "public_in",
             Seat.LINK_SIGNED_OUT: "public_out"}
LINK_SEATS = {Seat.LINK, Seat.LINK_SIGNED_OUT}


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    # The world's users all get a password; the default hasher costs ~0.5 s each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _call(w, seat: Seat, action: Action):
    """The request the seat's page sends for the action: (method, path, body)."""
    p, v = w.prompt.pk, w.v2.pk
    # A run names a variable the template lacks: access passes first, then rendering
    # refuses it (400 unknown_variables) before anything reaches a model.
    run_body = {"variables": {"not_in_the_template": "x"}}
    return {
        # The playground page runs on the prompt's run route; a share-link page by version reference.
        Action.RUN: ("post", f"/api/prompts/{p}/versions/{v}/run" if seat in LINK_SEATS
                     else f"/api/prompts/{p}/run", run_body if seat in LINK_SEATS
                     else {"version": str(v), "body": "Hello {{name}}!", **run_body}),
        Action.COPY: ("get", f"/api/prompts/{p}/versions/{v}", None),  # the text the page shows and copies
        Action.FORK: ("post", f"/api/prompts/{p}/fork", {"version": str(v)}),
        Action.EXPORT: ("get", f"/api/prompts/{p}/versions/{v}/export", None),
        Action.SAVE: ("post", f"/api/prompts/{p}/versions", {"parent": str(v), "body": "edited",
                                                             "model": "fixed-cost"}),
        Action.LABEL: ("post", f"/api/prompts/{p}/labels/production/move",
                       {"version": str(w.v1.pk), "expected": str(v)}),
        Action.SHARE: ("post", f"/api/prompts/{p}/links", {"mode": "public", "name": "new"}),
    }[action]


# The run routes look the caller up on a thread of their own: their rows must be committed.
ACTION_PARAMS = [pytest.param(a, marks=pytest.mark.django_db(transaction=a == Action.RUN), id=a.value)
                 for a in Action]


@pytest.mark.parametrize("seat", list(Seat))
@pytest.mark.parametrize("action", ACTION_PARAMS)
def test_each_cell_of_the_table_is_what_the_api_allows(seat, action):
    w = build_world("active")
    method, path, body = _call(w, seat, action)
    response = getattr(w.client(PRINCIPAL[seat]), method)(path, body, format="json")
    cell = (seat, action, response.status_code, response.content[:300])
    if action in ACTIONS[seat]:
        rendered = response.status_code == 400 and response.json()["error"]["code"] == "unknown_variables"
        assert response.status_code < 300 or (action == Action.RUN and rendered), cell
    else:
        assert response.status_code in (401, 403), cell


@pytest.mark.parametrize("seat", list(Seat))
def test_the_seat_follows_from_the_role_access_decides(db, seat):
    w = build_world("active")
    signed_in = PRINCIPAL[seat] in SIGNED_IN
    prompt = access_prompt(user=w.users[PRINCIPAL[seat]] if signed_in else AnonymousUser(),
                           prompt_id=w.prompt.pk, need="view", version_id=w.v2.pk,
                           share_token=w.tokens["public"] if seat in LINK_SEATS else None)
    assert seat_of(prompt.access_role, signed_in=signed_in) == seat


def test_the_docs_role_table_is_the_rules_table():
    text = actions.DOCS.read_text()
    assert actions.TABLE_START in text, "docs/prompts.md lacks the roles table markers"
    assert text == actions.docs_with_table(text), \
        "docs/prompts.md's roles table is stale: run `python -m playground.actions`"
