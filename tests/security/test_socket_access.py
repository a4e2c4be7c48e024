"""M4: websockets end when access ends (accounts/socket_access.py).

Live: two server processes sharing PostgreSQL and Redis, the sockets on one, the
logout / password change / deactivation / key revocation done over HTTP on the
other; each concerned socket must close with 4401 within 5 s (the servers' access
re-check is set to an hour, so the channel-layer event is what closes them), and
the sockets it does not concern stay open.

In-process (both passes): the re-check closes a socket whose access ended without
an event (a bulk update, a session deleted behind Django's back)."""

import asyncio
import json
from html.parser import HTMLParser

import httpx
import pytest
from channels.db import database_sync_to_async as db
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from accounts import services as account_services
from config.asgi import application
from core import adb
from tests.chat.helpers import ORIGIN, connect, recv_type
from tests.chat.live import LiveServer
from tests.factories import PASSWORD, ApiKeyFactory, UserFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]
# The live tests are needs_services (server processes sharing Redis) and slow.
CHAT, BADGE = "/ws/chat/", "/ws/chat/unread/"
WITHIN = 5.0  # seconds from the HTTP response to the socket's close
NEW_PASSWORD = "an0ther-correct-horse-battery"


@pytest.fixture(autouse=True)
def _channel_layer_per_test():
    """A channel layer per test (each its own loop), as in tests/chat/conftest.py."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
async def _close_async_db_pool():
    yield
    await adb.close()


@pytest.fixture(scope="module")
def servers(django_db_setup, django_db_blocker):
    """Two server processes; an hour between access re-checks: only events close sockets."""
    env = {"CHAT_ACCESS_RECHECK_SECONDS": "3600"}
    with LiveServer(**env) as a, LiveServer(**env) as b:
        yield a, b


@pytest.fixture
def dana(transactional_db):
    """A staff user (the admin's own password change page is hers) with two API keys."""
    user = UserFactory(username="dana", is_staff=True)
    keys = [ApiKeyFactory.create_with_raw(user=user, name=f"k{i}") for i in range(2)]
    return user, keys


class _FormFields(HTMLParser):
    """What a browser would submit for the page's forms: named inputs (checked
    boxes only, no submit buttons), selected options, textareas."""

    def __init__(self):
        super().__init__()
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        name = a.get("name")
        if tag == "input" and name and a.get("type") not in ("submit", "button", "image", "file"):
            if a.get("type") not in ("checkbox", "radio") or "checked" in a:
                self.fields.append((name, a.get("value") or ("on" if a.get("type") == "checkbox" else "")))
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.fields.append((self._select, a.get("value", "")))
        elif tag == "textarea" and name:
            self._textarea = name
            self.fields.append((name, ""))

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data):
        if self._textarea:
            self.fields[-1] = (self._textarea, self.fields[-1][1] + data)


async def _login(server: LiveServer, username: str, password: str = PASSWORD) -> httpx.AsyncClient:
    """A browser's session on `server`, signed in through the login page."""
    http = httpx.AsyncClient(base_url=server.base, timeout=30)
    await http.get("/login/")
    r = await http.post("/login/", data={"username": username, "password": password,
                                         "csrfmiddlewaretoken": http.cookies[settings.CSRF_COOKIE_NAME]})
    assert r.status_code == 302, r.text[:500]
    return http


def _csrf(http: httpx.AsyncClient) -> dict:
    return {"X-CSRFToken": http.cookies[settings.CSRF_COOKIE_NAME]}


async def _socket(server: LiveServer, path: str, *, session: httpx.AsyncClient | None = None,
                  key: str | None = None):
    headers = {}
    if session is not None:
        headers["Cookie"] = f"{settings.SESSION_COOKIE_NAME}={session.cookies[settings.SESSION_COOKIE_NAME]}"
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    ws = await ws_connect(f"ws://127.0.0.1:{server.port}{path}", origin=server.base, open_timeout=10,
                          additional_headers=headers, close_timeout=1)
    first = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert first["type"] == ("welcome" if path == CHAT else "unread"), first
    return ws


async def _closed(ws, deadline: float) -> tuple[int, str]:
    """The close code and reason, once the server closed the socket (by `deadline`)."""
    loop = asyncio.get_running_loop()
    try:
        while True:
            await asyncio.wait_for(ws.recv(), max(0.01, deadline - loop.time()))
    except ConnectionClosed:
        return ws.close_code, ws.close_reason
    except TimeoutError:
        raise AssertionError(f"socket still open {WITHIN}s after its access ended") from None


async def _all_closed(sockets, reason: str) -> None:
    deadline = asyncio.get_running_loop().time() + WITHIN
    for ws in sockets:
        assert await _closed(ws, deadline) == (4401, reason)


async def _still_open(ws, path: str) -> None:
    """The socket still answers (a heartbeat on the chat socket, a sync on the badge's)."""
    await ws.send(json.dumps({"type": "heartbeat" if path == CHAT else "sync"}))
    want = "heartbeat_ok" if path == CHAT else "unread"
    while (frame := json.loads(await asyncio.wait_for(ws.recv(), 10)))["type"] != want:
        assert frame["type"] != "error", frame


@pytest.mark.needs_services
@pytest.mark.slow
async def test_should_close_the_sockets_of_a_logged_out_session_in_another_process(servers, dana):
    a, b = servers
    user, ((_, key), _) = dana
    phone = await _login(b, "dana")  # the session that logs out
    laptop = await _login(b, "dana")  # another session of the same user
    gone = [await _socket(a, CHAT, session=phone), await _socket(a, BADGE, session=phone)]
    kept = [(await _socket(a, CHAT, session=laptop), CHAT), (await _socket(a, BADGE, session=laptop), BADGE),
            (await _socket(a, CHAT, key=key), CHAT)]

    r = await phone.post("/logout/", headers=_csrf(phone))
    assert r.status_code == 302
    await _all_closed(gone, "logout")
    for ws, path in kept:
        await _still_open(ws, path)
        await ws.close()


@pytest.mark.needs_services
@pytest.mark.slow
async def test_should_close_every_socket_of_the_user_when_the_password_changes(servers, dana):
    a, b = servers
    user, ((_, key), _) = dana
    admin = await _login(b, "dana")
    other = await _login(b, "dana")
    sockets = [await _socket(a, CHAT, session=admin), await _socket(a, BADGE, session=admin),
               await _socket(a, CHAT, session=other), await _socket(a, CHAT, key=key)]

    r = await admin.post("/admin/password_change/", headers=_csrf(admin),
                         data={"old_password": PASSWORD, "new_password1": NEW_PASSWORD,
                               "new_password2": NEW_PASSWORD})
    assert r.status_code == 302, r.text[:500]
    await _all_closed(sockets, "password_changed")


@pytest.mark.needs_services
@pytest.mark.slow
async def test_should_close_every_socket_of_a_user_deactivated_in_the_admin(servers, dana, transactional_db):
    a, b = servers
    user, ((_, key), _) = dana
    await db(get_user_model().objects.create_superuser)("root", "root@example.com", PASSWORD)
    bystander = await db(UserFactory)(username="erin")
    session = await _login(b, "dana")
    sockets = [await _socket(a, CHAT, session=session), await _socket(a, BADGE, session=session),
               await _socket(a, CHAT, key=key)]
    erin = await _socket(a, CHAT, key=(await db(ApiKeyFactory.create_with_raw)(user=bystander))[1])

    root = await _login(b, "root")
    page = f"/admin/auth/user/{user.pk}/change/"
    form = _FormFields()
    form.feed((await root.get(page)).text)
    fields: dict[str, list[str]] = {"_save": ["Save"]}
    for name, value in form.fields:
        if name != "is_active":
            fields.setdefault(name, []).append(value)
    assert fields["username"] == ["dana"]
    r = await root.post(page, data=fields)
    assert r.status_code == 302, r.text[:2000]
    assert not (await db(get_user_model().objects.get)(pk=user.pk)).is_active
    await _all_closed(sockets, "deactivated")
    await _still_open(erin, CHAT)
    await erin.close()


@pytest.mark.needs_services
@pytest.mark.slow
async def test_should_close_the_sockets_of_a_revoked_key_in_another_process(servers, dana):
    a, b = servers
    user, ((revoked, key), (_, other_key)) = dana
    gone = await _socket(a, CHAT, key=key)
    session = await _login(b, "dana")
    kept = [await _socket(a, CHAT, key=other_key), await _socket(a, CHAT, session=session)]

    async with httpx.AsyncClient(base_url=b.base, timeout=30) as http:
        r = await http.delete(f"/api/accounts/keys/{revoked.pk}", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200 and r.json()["revoked_at"], r.text
    await _all_closed([gone], "key_revoked")
    for ws in kept:
        await _still_open(ws, CHAT)
        await ws.close()


# --- in process: the re-check, for an end of access that sent no event -----


@db
def _session_socket(user) -> tuple[WebsocketCommunicator, str]:
    client = Client()
    client.force_login(user)
    session_key = client.cookies[settings.SESSION_COOKIE_NAME].value
    cookie = (b"cookie", f"{settings.SESSION_COOKIE_NAME}={session_key}".encode())
    return WebsocketCommunicator(application, CHAT, headers=[ORIGIN, cookie]), session_key


async def _close_of(comm, timeout: float = WITHIN) -> dict:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (out := await comm.receive_output(max(0.01, deadline - loop.time())))["type"] != "websocket.close":
        pass
    return out


async def test_should_close_sockets_by_recheck_when_no_event_came(settings):
    settings.CHAT_PRESENCE_POLL_SECONDS = 0.1
    settings.CHAT_ACCESS_RECHECK_SECONDS = 0
    dana, erin = await db(UserFactory)(username="dana"), await db(UserFactory)(username="erin")
    session_socket, session_key = await _session_socket(dana)
    assert (await session_socket.connect(timeout=10))[0]
    _, erin_key = await db(ApiKeyFactory.create_with_raw)(user=erin)
    erin_socket = await connect(erin_key)

    # Behind the signals' back: no access.ended event is sent for either.
    await db(Session.objects.filter(session_key=session_key).delete)()
    assert await _close_of(session_socket) == {"type": "websocket.close", "code": 4401, "reason": "logout"}
    await db(get_user_model().objects.filter(pk=erin.pk).update)(is_active=False)
    assert await _close_of(erin_socket) == {"type": "websocket.close", "code": 4401, "reason": "deactivated"}


async def test_should_close_a_key_socket_in_process_when_the_key_is_revoked(settings):
    settings.CHAT_ACCESS_RECHECK_SECONDS = 3600  # the event, not the re-check
    erin = await db(UserFactory)(username="erin")
    key, raw = await db(ApiKeyFactory.create_with_raw)(user=erin)
    _, other_raw = await db(ApiKeyFactory.create_with_raw)(user=erin, name="other")
    doomed, kept = await connect(raw), await connect(other_raw)
    await db(account_services.api_key_revoke)(key=key)
    assert await _close_of(doomed) == {"type": "websocket.close", "code": 4401, "reason": "key_revoked"}
    await kept.send_json_to({"type": "heartbeat"})
    assert (await recv_type(kept, "heartbeat_ok"))["type"] == "heartbeat_ok"
    await kept.disconnect()
