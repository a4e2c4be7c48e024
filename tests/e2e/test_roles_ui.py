"""Roles in a real browser: one test per cell of playground.actions' table (seat x
action). An allowed action is done through its control (run, copy, fork, export,
save, move a label, open the share dialog); a refused one has no control on the
page. One prompt, one live server, one signed-in browser context per seat, for the module."""

import re
import uuid
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import expect

from playground.actions import ACTIONS, Action, Seat
from tests.e2e.conftest import screenshot
from tests.factories import PASSWORD

# django_db (not transactional: no flush between cells) so the test database is set up; the
# module's world is committed before the first test and deleted after the last.
pytestmark = [pytest.mark.e2e, pytest.mark.needs_services, pytest.mark.django_db]

SYSTEM, BODY = "Be brief.", "Hello {{name}}!"
ACCOUNT_SEATS = (Seat.OWNER, Seat.EDITOR, Seat.VIEWER)


@dataclass
class World:
    prompt_id: str
    v1: str
    token: str
    owner: str
    users: dict = field(default_factory=dict)  # seat or "revoked" -> username


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    from django.contrib.auth import get_user_model

    from playground.models import Prompt
    from sharing import services as sharing
    from tests.factories import PromptFactory, PromptVersionFactory, UserFactory

    names = {seat: f"{seat.value[:8]}{uuid.uuid4().hex[:8]}" for seat in (*ACCOUNT_SEATS, Seat.LINK)}
    names["revoked"] = f"revoked{uuid.uuid4().hex[:8]}"
    with django_db_blocker.unblock():
        users = {key: UserFactory(username=name) for key, name in names.items()}
        owner = users[Seat.OWNER]
        prompt = PromptFactory(owner=owner, title="Role table prompt")
        v1 = PromptVersionFactory(prompt=prompt, body=BODY, system=SYSTEM, variables={"name": None})
        for key, role in ((Seat.EDITOR, "editor"), (Seat.VIEWER, "viewer"), ("revoked", "viewer")):
            grant = sharing.grant_create(prompt=prompt, actor=owner, role=role, username=names[key])
        sharing.grant_revoke(prompt=prompt, grant_id=grant.pk, actor=owner)  # the last one: "revoked"
        # Pinned to v1: every save below makes a new version; the link keeps showing this one.
        _, token = sharing.link_create(prompt=prompt, actor=owner, mode="public", name="Roles",
                                       version_id=v1.pk)
    yield World(prompt_id=str(prompt.pk), v1=str(v1.pk), token=token, owner=owner.username, users=names)
    with django_db_blocker.unblock():  # forks included: they belong to these users
        Prompt.objects.filter(owner__in=users.values()).delete()
        get_user_model().objects.filter(pk__in=[u.pk for u in users.values()]).delete()


@pytest.fixture(autouse=True)
def _connection_closed(request):
    """Each cell's connection goes back to the pool (a checked-out one would keep the
    test database from being dropped at the end)."""
    request.getfixturevalue("db")  # set up first, so its rollback comes before the close
    yield
    from django.db import connection

    connection.close()


@pytest.fixture(scope="module")
def seat_pages(world, live_url, browser):
    """One page per seat, signed in as the seat's user (the link holder signed out: a bare context)."""
    pages = {}
    for seat in (*Seat, "revoked"):
        context = browser.new_context(viewport={"width": 1280, "height": 900},
                                      permissions=["clipboard-read", "clipboard-write"])
        context.set_default_timeout(10_000)
        page = context.new_page()
        if seat in world.users:
            page.goto(f"{live_url}/login/")
            page.fill("#id_username", world.users[seat])
            page.fill("#id_password", PASSWORD)
            page.click("button[type=submit]")
            expect(page.get_by_text("Log out " + world.users[seat])).to_be_visible()
        pages[seat] = page
    yield pages
    for page in pages.values():
        page.context.close()


def open_seat_page(page, world, live_url, seat: Seat, action: Action):
    """The page where the seat finds the action: the prompt's playground (labels: its
    history) for an account, the share-link page for a link holder."""
    if seat not in ACCOUNT_SEATS:
        page.goto(f"{live_url}/s/{world.token}")
        expect(page.locator("h1")).to_have_text("Role table prompt")
    elif action == Action.LABEL:
        page.goto(f"{live_url}/prompts/{world.prompt_id}/history/")
        expect(page.locator('svg.tree g.node[data-number="1"]')).to_be_visible()
    else:
        page.goto(f"{live_url}/prompts/{world.prompt_id}/?v={world.v1}")
        expect(page.locator("#body-input")).to_have_value(BODY)  # the version is in the editor
        expect(page.locator("#body-input")).to_be_editable()


# The control of each action: absent from the page of a seat that may not take it.
CONTROL = {Action.RUN: "#run-btn", Action.COPY: "#copy-btn", Action.FORK: "#fork-btn",
           Action.EXPORT: "#export-open", Action.SAVE: "#save-btn", Action.LABEL: "#label-move",
           Action.SHARE: "#share-open"}


def do_action(page, world, seat: Seat, action: Action):
    if action == Action.RUN:
        page.fill("[data-var=name]", "Ada")
        page.click("#run-btn")
        # The fixed-cost engine answers with the user message reversed.
        expect(page.locator("#output")).to_have_text("!adA olleH", timeout=15_000)
    elif action == Action.COPY:
        page.click("#copy-btn")
        expect(page.locator("#action-status")).to_have_text("Copied the prompt text.")
        assert page.evaluate("navigator.clipboard.readText()") == f"System:\n{SYSTEM}\n\nUser:\n{BODY}"
    elif action == Action.FORK:
        page.click("#fork-btn")
        page.wait_for_url(lambda url: re.search(r"/prompts/[0-9a-f-]{36}/$", url)
                          and world.prompt_id not in url)
        expect(page.locator("h1")).to_contain_text("Role table prompt (fork)")
        expect(page.locator("#save-btn")).to_be_visible()  # the fork is the seat's own
    elif action == Action.EXPORT:
        page.click("#export-open")
        expect(page.locator("#export-code")).to_contain_text("PROMPTYARD_API_KEY")
    elif action == Action.SAVE:
        page.fill("#body-input", f"{BODY} ({seat.value} {uuid.uuid4().hex[:6]})")
        page.fill("#commit-message", f"saved by the {seat.value}")
        page.click("#save-btn")
        expect(page.locator("#save-ok")).to_have_text(re.compile(r"^Saved version \d+\.$"))
    elif action == Action.LABEL:
        page.locator('svg.tree g.node[data-number="1"]').click()
        page.fill("#label-name", f"{seat.value}-pick")
        page.click("#label-move")
        expect(page.locator("#label-status")).to_contain_text(f"{seat.value}-pick → v1")
    elif action == Action.SHARE:
        page.click("#share-open")
        expect(page.locator("#share-dialog")).to_be_visible()
        expect(page.locator("#share-links li")).not_to_have_count(0)  # the pinned link, listed


@pytest.mark.parametrize("action", list(Action), ids=lambda a: a.value)
@pytest.mark.parametrize("seat", list(Seat), ids=lambda s: s.value)
def test_each_seat_sees_exactly_its_actions(seat_pages, world, live_url, seat, action):
    page = seat_pages[seat]
    open_seat_page(page, world, live_url, seat, action)
    if action in ACTIONS[seat]:
        do_action(page, world, seat, action)
    else:
        expect(page.locator(CONTROL[action])).to_be_hidden()  # absent, or hidden by the page for this role
        if seat == Seat.LINK_SIGNED_OUT and action in (Action.RUN, Action.FORK):
            expect(page.locator("#sign-in-note")).to_be_visible()  # told to sign in, not left guessing
        if action == Action.SAVE and seat in ACCOUNT_SEATS:
            expect(page.locator("#read-only-panel")).to_contain_text("saving a version is for its editors")
    if action == Action.SAVE:
        screenshot(page, f"roles-{seat.value}")


def test_a_revoked_grant_gets_404_on_every_prompt_page(seat_pages, world, live_url):
    page = seat_pages["revoked"]
    for path in ("", "history/"):
        response = page.goto(f"{live_url}/prompts/{world.prompt_id}/{path}")
        assert response.status == 404
    page.goto(f"{live_url}/prompts/")
    expect(page.get_by_text("Role table prompt")).to_have_count(0)


def test_shared_prompts_are_badged_with_who_shared_them(seat_pages, world, live_url):
    for seat in (Seat.EDITOR, Seat.VIEWER):
        page = seat_pages[seat]
        page.goto(f"{live_url}/prompts/")
        # The prompt itself, not a fork of it the seat made (its own: no badge).
        title = page.locator("h3", has_text=re.compile("^Role table prompt$"))
        card = page.locator(".prompt-card").filter(has=title)
        expect(card.locator(".badge.shared")).to_have_text(f"shared by {world.owner} · {seat.value}")
        page.goto(f"{live_url}/prompts/{world.prompt_id}/")
        expect(page.locator("#shared-badge")).to_have_text(f"shared by {world.owner} · {seat.value}")
    owner = seat_pages[Seat.OWNER]
    owner.goto(f"{live_url}/prompts/{world.prompt_id}/")
    expect(owner.locator("#version-badge")).not_to_have_text("new")
    expect(owner.locator("#shared-badge")).to_have_count(0)


def test_the_shortcuts_popover_lists_the_seats_shortcuts(seat_pages, world, live_url):
    for seat, rows in ((Seat.OWNER, ["Run", "Save a version", "Add a message", "Show or hide this list"]),
                       (Seat.VIEWER, ["Run", "Add a message", "Show or hide this list"])):
        page = seat_pages[seat]
        page.goto(f"{live_url}/prompts/{world.prompt_id}/")
        pop = page.locator("#shortcuts-pop")
        expect(pop).to_be_hidden()
        page.locator("h1").click()  # focus outside the editors: "?" is the popover's key
        page.keyboard.press("?")
        expect(pop).to_be_visible()
        expect(pop.locator("dd:visible")).to_have_text(rows)
        screenshot(page, f"shortcuts-{seat.value}")
        page.keyboard.press("Escape")
        expect(pop).to_be_hidden()
        page.click("#shortcuts-open")
        expect(pop).to_be_visible()
        page.keyboard.press("Escape")
        page.locator("#body-input").focus()
        page.keyboard.press("?")  # typed into the editor, not a shortcut there
        expect(pop).to_be_hidden()
