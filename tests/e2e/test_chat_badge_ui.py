"""The navigation bar's unread badge, live on every page (the badge socket,
/ws/chat/unread/), in Chromium with two users against live uvicorn servers; and the
chat page a second tab opens to read."""

import json
import re
import time
import uuid

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from tests.e2e.conftest import _server_env
from tests.e2e.test_playground_ui import sign_up
from tests.e2e.test_sharing_chat_ui import NOTIFICATION_PROBE
from tests.livesubprocess import free_port, running_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]
BADGE_WS = "/ws/chat/unread/"
# How long a live push may take to reach the badge on a loaded machine: a third of
# the 30 s fallback poll, so only a push passes.
LIVE_MS = 10_000


class BadgeSockets:
    """The badge sockets a page opens, each with the frames it got, recorded as
    Playwright reports them (so a frame that came before anyone waited still counts)."""

    def __init__(self, page):
        self.page = page
        self.opened: list[tuple] = []
        page.on("websocket", self._opened)

    def _opened(self, ws):
        if ws.url.endswith(BADGE_WS):
            frames: list = []
            ws.on("framereceived", lambda payload: frames.append(json.loads(payload)))
            self.opened.append((ws, frames))

    def wait_live(self, *, after: int = 0, timeout: float = 10) -> list:
        """The frames of the first socket, past the first `after`, that got a frame."""
        deadline = time.monotonic() + timeout
        while True:
            for _, frames in self.opened[after:]:
                if frames:
                    return frames
            left_ms = (deadline - time.monotonic()) * 1000
            assert left_ms > 0, f"no badge socket got a frame in {timeout}s ({len(self.opened)} opened)"
            waiting = [ws for ws, _ in self.opened[after:] if not ws.is_closed()]
            try:  # let Playwright deliver events until a frame comes, a socket opens or closes
                if waiting:
                    waiting[-1].wait_for_event("framereceived", timeout=left_ms)
                else:
                    self.page.wait_for_event("websocket", timeout=left_ms)
            except PlaywrightError:
                continue  # closed before a frame (its server was down): the next one may do


def _send_api(page, to: int, body: str) -> None:
    """A message sent through the REST API with the page's session (any page will do)."""
    status = page.evaluate("""async ([to, body, cid]) => {
        const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
        const res = await fetch('/api/chat/messages', {method: 'POST', credentials: 'same-origin',
            headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
            body: JSON.stringify({to, body, client_msg_id: cid})});
        return res.status;
    }""", [to, body, uuid.uuid4().hex])
    assert status == 201


def _user_id(username: str) -> int:
    return get_user_model().objects.get(username=username).pk


def test_should_count_a_message_live_on_another_page_notify_while_hidden_and_clear_on_read_elsewhere(
        live_url, new_page, console_errors):
    alice, bob = new_page(), new_page()
    bob.context.grant_permissions(["notifications"], origin=live_url)
    for page in (alice, bob):
        page.context.add_init_script(NOTIFICATION_PROBE)
    bob_name = sign_up(bob, live_url)
    alice_name = sign_up(alice, live_url)
    sockets = BadgeSockets(bob)
    bob.goto(f"{live_url}/prompts/")
    assert sockets.wait_live() == [{"type": "unread", "total": 0}]
    badge = bob.locator("#nav-chat-unread")
    expect(badge).to_be_hidden()

    alice.goto(f"{live_url}/chat/?with={bob_name}")
    expect(alice.locator("#chat-peer")).to_have_text(bob_name)
    alice.fill("#chat-body", "Are you there?")
    alice.keyboard.press("Enter")
    expect(badge).to_have_text("1", timeout=LIVE_MS)  # no reload, no poll
    assert bob.evaluate("window.__notes") == []  # the tab is in view: no notification

    # With the tab hidden, the next message notifies, naming the sender but not quoting the text.
    bob.evaluate("window.__hidden = true")
    alice.fill("#chat-body", "Hello?")
    alice.keyboard.press("Enter")
    expect(badge).to_have_text("2", timeout=LIVE_MS)
    assert bob.evaluate("window.__notes") == [{"title": alice_name, "body": "New message · 2 unread"}]
    bob.evaluate("window.__hidden = false")

    # Bob reads the conversation in another tab: the first tab's badge goes.
    reader = console_errors.watch(bob.context.new_page())
    reader.goto(f"{live_url}/chat/")
    reader.locator("#chat-conversations li", has_text=alice_name).locator("button").click()
    expect(reader.locator("#chat-messages li", has_text="Hello?")).to_be_visible()
    expect(badge).to_be_hidden(timeout=LIVE_MS)
    assert bob.evaluate("window.__notes") == [{"title": alice_name, "body": "New message · 2 unread"}]

    # Alice never allowed notifications: her hidden tab counts the reply, quietly.
    alice_sockets = BadgeSockets(alice)
    alice.goto(f"{live_url}/prompts/")
    assert alice_sockets.wait_live() == [{"type": "unread", "total": 0}]  # so the reply is a growth
    assert alice.evaluate("Notification.permission") != "granted"
    alice.evaluate("window.__hidden = true")
    reader.fill("#chat-body", "Here now")
    reader.keyboard.press("Enter")
    expect(alice.locator("#nav-chat-unread")).to_have_text("1", timeout=LIVE_MS)
    assert alice.evaluate("window.__notes") == []
    assert console_errors == []


def test_should_show_each_message_once_when_one_arrives_while_the_history_loads(live_url, new_page,
                                                                              console_errors):
    alice, bob = new_page(), new_page()
    bob_name = sign_up(bob, live_url)
    alice_name = sign_up(alice, live_url)
    _send_api(alice, _user_id(bob_name), "first")
    held = []
    bob.route("**/api/chat/conversations/*/messages*", lambda route: held.append(route))
    bob.goto(f"{live_url}/chat/")
    bob.locator("#chat-conversations li", has_text=alice_name).locator("button").click()
    # While the history request is held, a message comes live and is shown...
    _send_api(alice, _user_id(bob_name), "live while loading")
    expect(bob.locator("#chat-messages li", has_text="live while loading")).to_be_visible()
    # ...then the history (which has it too) arrives: each message is there once.
    assert len(held) == 1
    held[0].continue_()
    expect(bob.locator("#chat-messages li", has_text="first")).to_be_visible()
    expect(bob.locator("#chat-messages li")).to_have_count(2)
    assert console_errors == []


def test_should_fall_back_to_polling_when_the_badge_socket_is_refused(live_url, new_page, console_errors):
    alice, bob = new_page(), new_page()
    bob_name = sign_up(bob, live_url)
    sign_up(alice, live_url)
    _send_api(alice, _user_id(bob_name), "while you were out")
    refused = []

    def refuse(ws):
        refused.append(ws)
        # The sync close() deadlocks inside a websocket route handler (Playwright 1.54:
        # the handler runs on its dispatcher); a coroutine returned here is awaited.
        return ws._impl_obj.close()

    bob.route_web_socket(re.compile(re.escape(BADGE_WS) + "$"), refuse)
    bob.goto(f"{live_url}/prompts/")
    expect(bob.locator("#nav-chat-unread")).to_have_text("1")
    assert refused  # the count came from /api/chat/unread, not from a socket
    assert console_errors == []


def test_should_reconnect_the_badge_after_the_server_restarts(new_page, tmp_path):
    port = free_port()
    env = _server_env(tmp_path)
    args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off"]
    alice, bob = new_page(), new_page()
    with running_server(args, env, port) as server:
        bob_name = sign_up(bob, server.base)
        sign_up(alice, server.base)
        bob_id = _user_id(bob_name)
        sockets = BadgeSockets(bob)
        bob.goto(f"{server.base}/prompts/")
        sockets.wait_live()
        _send_api(alice, bob_id, "before the restart")
        expect(bob.locator("#nav-chat-unread")).to_have_text("1", timeout=LIVE_MS)
        before = len(sockets.opened)
    # Stopped (its sockets dropped, reconnects refused), then a new process on the same port.
    with running_server(args, env, port):
        # Backoff tops out at 30 s (with jitter), so a new socket is up within about that.
        assert sockets.wait_live(after=before, timeout=60)[0] == {"type": "unread", "total": 1}
        _send_api(alice, bob_id, "after the restart")
        expect(bob.locator("#nav-chat-unread")).to_have_text("2", timeout=LIVE_MS)
