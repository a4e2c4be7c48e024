"""Each attack of the security review, tried against one live stack as an attacker
with a free account would: two server processes (uvicorn, sharing PostgreSQL and
Redis), a Celery worker (fixed-cost engine on RabbitMQ), and an `eval_worker` where a
run must be driven. The other modules of tests/security test each class in depth;
this one checks that the whole stack, as deployed, shows the secure behaviour.

The swarm (M5) is not HTTP: tests/security/test_swarm.py tries it against a real
`model_fetch --seed` worker with outsider libtorrent sessions."""

import asyncio
import json
import select
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import httpx
import pytest
from django.conf import settings
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from tests.factories import PASSWORD, ApiKeyFactory, UserFactory
from tests.inference_client.conftest import (
    MODEL,
    chat,
    gateway_worker,
    job_worker,
    stack_env,
    uvicorn_server,
    wait_for_worker,
)
from tests.polling import wait_for

pytestmark = [pytest.mark.needs_services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WORST = r"(?s)^(?:.|.)*\x00$"  # froze a server process on Python's re
RUN_CAP = 3
STACK_ENV = {"EVAL_MAX_ACTIVE_RUNS": str(RUN_CAP), "CHAT_ACCESS_RECHECK_SECONDS": "3600"}


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker):
    """(server A, server B): two processes of the app and one GPU worker."""
    env = stack_env(**STACK_ENV)
    with ExitStack() as stack:
        stack.enter_context(gateway_worker(MODEL, concurrency=64, name="attacks", env=env))
        servers = [stack.enter_context(uvicorn_server(django_db_blocker, **STACK_ENV)) for _ in range(2)]
        yield servers


@pytest.fixture
def live(stack, transactional_db):
    wait_for_worker()  # its heartbeat is back after the per-test cache flush
    return stack


def api(base: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def attacker(tier: str = "free"):
    user = UserFactory()
    _, raw = ApiKeyFactory.create_with_raw(user=user, tier=tier)
    return user, raw


def prompt_version(client: httpx.Client, body: str = "{{q}}", **fields) -> tuple[dict, dict]:
    prompt = client.post("/api/prompts/", json={"title": "attack"}).json()
    version = client.post(f"/api/prompts/{prompt['id']}/versions",
                          json={"body": body, "model": MODEL, **fields})
    assert version.status_code == 201, version.text
    return prompt, version.json()


def test_h1_the_worst_pattern_is_scored_on_re2_while_both_servers_answer(live, django_db_blocker):
    a, b = live
    _, key = attacker()
    client = api(a, key)
    prompt, version = prompt_version(client, max_tokens=1200)
    # The engine answers the message reversed: a JSON object whose "a" is long, with no NUL.
    reversed_output = json.dumps({"a": "b" * 1000})[::-1]
    dataset = client.post("/api/datasets/", json={
        "name": "long", "rows": [{"variables": {"q": reversed_output}} for _ in range(20)]}).json()
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": WORST}}}
    refused = client.post("/api/evals/runs", json={
        "dataset": dataset["id"], "columns": [{"prompt": prompt["id"], "version": version["id"]}],
        "evaluators": [{"name": "regex", "args": {"pattern": r"(a)\1"}}]})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "unsupported_pattern"
    run = client.post("/api/evals/runs", json={
        "dataset": dataset["id"], "columns": [{"prompt": prompt["id"], "version": version["id"]}],
        "evaluators": [{"name": "regex", "args": {"pattern": WORST}},
                       {"name": "json_schema", "args": {"schema": schema}}]})
    assert run.status_code == 201, run.text
    with job_worker(django_db_blocker, "eval_worker", **STACK_ENV):
        def done():
            for base in (a, b):
                assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200
            state = client.get(f"/api/evals/runs/{run.json()['id']}").json()
            return state if state["status"] == "done" else None

        state = wait_for(done, timeout=120, interval=0.05, what="the run to finish")
    assert state["completed"] == 20
    cell = client.get(f"/api/evals/runs/{state['id']}/results?limit=1").json()["rows"][0]["cells"][0]
    assert cell["error"] is None, cell
    assert cell["scores"]["regex"] == {"score": 0.0, "passed": False, "reason": "no match"}
    assert cell["scores"]["json_schema"]["passed"] is False


def test_h2_a_40k_line_merge_preview_answers_within_2s(live):
    a, b = live
    _, key = attacker()
    client = api(a, key)
    lines = [f"line {i % 101} of a block that repeats\n" for i in range(40_000)]
    prompt, base = prompt_version(client, body="".join(lines))
    heads = []
    for at, text in ((100, "ours\n"), (30_000, "theirs\n")):
        edited = lines[:at] + [text] + lines[at + 1:]
        child = client.post(f"/api/prompts/{prompt['id']}/versions", json={
            "parent": base["id"], "body": "".join(edited), "model": MODEL})
        assert child.status_code == 201, child.text
        heads.append(child.json()["id"])
    started = time.monotonic()
    preview = api(b, key).post(f"/api/prompts/{prompt['id']}/merge",
                               json={"ours": heads[0], "theirs": heads[1]})
    elapsed = time.monotonic() - started
    assert preview.status_code == 200, preview.text
    assert elapsed < 2.0, elapsed  # the bound


@pytest.mark.parametrize("url,code", [
    ("https://[64:ff9b::7f00:1]/h", "webhook_url_forbidden"),  # NAT64 of 127.0.0.1
    ("https://[2002:7f00:1::1]/h", "webhook_url_forbidden"),  # 6to4 of 127.0.0.1
    ("https://[::ffff:169.254.169.254]/h", "webhook_url_forbidden"),  # the metadata service, mapped
    ("https://127.0.0.1/h", "webhook_url_forbidden"),
    ("http://93.184.216.34/h", "invalid_webhook_url"),  # plain http
])
def test_m1_webhooks_cannot_point_inside_the_network(live, url, code):
    a, _ = live
    _, key = attacker()
    response = api(a, key).post("/api/webhooks", json={"url": url, "events": ["version.created"]})
    assert response.status_code == 400, response.text
    assert (response.json()["error"]["code"], response.json()["error"]["field"]) == (code, "url")


def _send_chunked_until_answered(base: str, path: str, total: int) -> tuple[bytes, int]:
    """POST a chunked body of up to `total` bytes; stop at the first byte of an answer.
    Returns (the whole answer: head and its Content-Length of body, bytes sent)."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n".encode())
    chunk, sent = b"x" * 65536, 0
    try:
        while sent < total:
            if select.select([sock], [], [], 0)[0]:
                break
            sock.sendall(b"%x\r\n%b\r\n" % (len(chunk), chunk))
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    sock.settimeout(10)
    answer = b""
    while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _content_length(answer):
        data = sock.recv(65536)  # the head and the body may come in separate reads
        if not data:
            break
        answer += data
    sock.close()
    return answer, sent


def _content_length(answer: bytes) -> int:
    head = answer.partition(b"\r\n\r\n")[0].lower()
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def test_m2_an_endless_chunked_body_is_refused_while_it_is_sent(live):
    a, b = live
    for base, path in ((a, "/api/accounts/signup"), (b, "/v1/chat/completions")):
        answer, sent = _send_chunked_until_answered(base, path, 256 * 1024 * 1024)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"request_too_large" in answer
        assert sent < 64 * 1024 * 1024, sent  # answered long before the body ended


def test_m3_a_burst_of_runs_is_capped_and_the_gateway_keeps_answering(live):
    a, b = live
    _, key = attacker()
    client = api(a, key)
    prompt, version = prompt_version(client)
    dataset = client.post("/api/datasets/", json={"name": "d", "rows": [{"variables": {"q": "x"}}]}).json()
    body = {"dataset": dataset["id"], "columns": [{"prompt": prompt["id"], "version": version["id"]}],
            "evaluators": ["exact"]}
    _, other = attacker("paid")
    probes, stop = [], threading.Event()

    def probe():
        while not stop.is_set():
            probes.append(chat(b, other, "still here").status_code)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(lambda _: httpx.post(f"{a}/api/evals/runs", json=body, timeout=60,
                                                         headers={"Authorization": f"Bearer {key}"}),
                                    range(20)))
    finally:
        stop.set()
        prober.join()
    codes = sorted(r.status_code for r in answers)
    assert codes == [201] * RUN_CAP + [429] * (20 - RUN_CAP), codes
    refusal = next(r for r in answers if r.status_code == 429).json()["error"]
    assert (refusal["code"], refusal["limit"], refusal["setting"]) == (
        "too_many_active_jobs", RUN_CAP, "EVAL_MAX_ACTIVE_RUNS")
    assert probes and set(probes) == {200}, probes
    # No server drives a run: with services, only eval_worker processes do.
    created = [r.json()["id"] for r in answers if r.status_code == 201]
    assert {client.get(f"/api/evals/runs/{run}").json()["status"] for run in created} == {"queued"}


async def _socket_closed_by_logout_on_the_other_server(a: str, b: str, username: str) -> tuple[int, str]:
    async with httpx.AsyncClient(base_url=b, timeout=30) as session:
        await session.get("/login/")
        token = session.cookies[settings.CSRF_COOKIE_NAME]
        login = await session.post("/login/", data={"username": username, "password": PASSWORD,
                                                    "csrfmiddlewaretoken": token})
        assert login.status_code == 302, login.text[:300]
        cookie = f"{settings.SESSION_COOKIE_NAME}={session.cookies[settings.SESSION_COOKIE_NAME]}"
        ws = await ws_connect(a.replace("http://", "ws://") + "/ws/chat/", origin=a, open_timeout=10,
                              additional_headers={"Cookie": cookie}, close_timeout=1)
        assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "welcome"
        csrf = {"X-CSRFToken": session.cookies[settings.CSRF_COOKIE_NAME]}
        logout = await session.post("/logout/", headers=csrf)
        assert logout.status_code == 302
        try:
            while True:
                await asyncio.wait_for(ws.recv(), 5)  # the bound
        except ConnectionClosed:
            return ws.close_code, ws.close_reason


def test_m4_a_logout_on_one_server_closes_the_socket_on_the_other(live):
    a, b = live
    user = UserFactory()
    assert asyncio.run(_socket_closed_by_logout_on_the_other_server(a, b, user.username)) == (4401, "logout")


def test_l_labels_csv_csp_and_the_publish_permission(live):
    a, b = live
    _, key = attacker()
    client = api(b, key)
    prompt, version = prompt_version(client)
    label = client.post(f"/api/prompts/{prompt['id']}/labels/production%0A/move",
                        json={"version": version["id"], "expected": None})
    assert label.status_code == 400, label.text
    assert label.json()["error"]["code"] == "invalid_label_name"
    dataset = client.post("/api/datasets/", json={
        "name": "csv", "rows": [{"variables": {"q": '=HYPERLINK("http://example.invalid")'}}]}).json()
    csv = client.get(f"/api/datasets/{dataset['id']}/versions/{dataset['latest_version']}/export?as=csv")
    assert csv.status_code == 200 and "'=HYPERLINK" in csv.text, csv.text
    for base in (a, b):
        policy = httpx.get(f"{base}/login/").headers.get("content-security-policy", "")
        assert "default-src 'self'" in policy and "'nonce-" in policy and "unsafe-inline" not in policy
    staff = UserFactory(is_staff=True)
    with httpx.Client(base_url=a, timeout=30) as session:
        session.get("/login/")
        session.post("/login/", data={"username": staff.username, "password": PASSWORD,
                                      "csrfmiddlewaretoken": session.cookies[settings.CSRF_COOKIE_NAME]})
        action = session.post("/control/action", data={"action": "config_rollback"},
                              headers={"X-CSRFToken": session.cookies[settings.CSRF_COOKIE_NAME]})
    assert action.status_code == 403, action.text[:300]
