"""Webhooks as a way into the network, and forged or replayed deliveries.

M1: an attempt connects to the very addresses its URL check passed (a name that
resolves to a public address at the check and to 127.0.0.1 after it reaches
nothing inside: DNS rebinding), with TLS still verified against the URL's name;
IPv6 forms that carry an inside IPv4 address are refused; an answer is read to
WEBHOOK_MAX_RESPONSE_BYTES at most and an attempt ends at WEBHOOK_ATTEMPT_TIMEOUT_S
in all, however slowly the receiver trickles; endpoints are https unless
WEBHOOK_ALLOW_HTTP.

L: each attempt is signed when it is sent (a retry an hour after the event
carries a fresh timestamp), and the SDK's verifier, used by a real receiver of
real deliveries, refuses a tampered body and a stale (replayed) timestamp.

Attempts run in this process (attempt_delivery, what the Celery task runs), so
that the resolver can be swapped for one that changes its answer."""

from __future__ import annotations

import socket
import time
import uuid

import httpx
import pytest
from promptyard.webhooks import WebhookVerificationError, verify

from tests.factories import PromptFactory, UserFactory
from tests.playground.webhook_receiver import Receiver
from tests.polling import wait_for
from tests.security.webhook_servers import (
    Authority,
    RawServer,
    VerifyingReceiver,
    endless_body,
    endless_headers,
    trickle,
)
from webhooks.delivery import attempt_delivery
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import _delivery
from webhooks.signing import sign

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.WEBHOOK_ALLOW_HTTP = True  # most receivers here are plain-http local servers
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.WEBHOOK_TIMEOUT_S = 5.0
    # A failed attempt's retry is an hour away: no timer or message of it runs during the test.
    settings.WEBHOOK_BACKOFF_BASE_S = 3600.0
    settings.WEBHOOK_QUEUE = f"webhooks-security-test-{uuid.uuid4().hex[:8]}"  # nobody consumes it


def _delivery_to(url: str, secret: str | None = None) -> WebhookDelivery:
    """A pending delivery to `url` (registered without the check: the test decides what resolves)."""
    user = UserFactory()
    endpoint = WebhookEndpoint.objects.create(owner=user, prompt=PromptFactory(owner=user), url=url,
                                              events=["version.created"])
    if secret:
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(secret=secret)
        endpoint.secret = secret
    return _delivery(endpoint=endpoint, event="version.created", event_id=uuid.uuid4(),
                     body=b'{"id":"e1","type":"version.created"}')


def _attempt(delivery: WebhookDelivery) -> WebhookDelivery:
    attempt_delivery(delivery.pk)
    return WebhookDelivery.objects.get(pk=delivery.pk)


def _resolver(monkeypatch, name: str, answers: list[str]) -> list[str]:
    """The system resolver, except that `name` resolves to answers[0] the first time,
    answers[1] the next and the last one after (a DNS server under the attacker's
    control, with a zero TTL). Returns the log of the name's resolutions."""
    real = socket.getaddrinfo
    log: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host != name:
            return real(host, port, *args, **kwargs)
        address = answers[min(len(log), len(answers) - 1)]
        log.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return log


def _receivers_on_one_port(tls=None) -> tuple[Receiver, Receiver]:
    """An inside server on 127.0.0.1 and the legitimate receiver on 127.0.0.2, one port."""
    for _ in range(20):
        inside = Receiver()
        try:
            return inside, Receiver(host="127.0.0.2", port=inside.port, tls=tls)
        except OSError:  # that port is taken on 127.0.0.2: another pair
            inside.close()
    raise RuntimeError("no port free on both 127.0.0.1 and 127.0.0.2")


def test_should_connect_to_the_checked_address_when_the_name_rebinds_to_loopback(monkeypatch, settings):
    # 127.0.0.2 stands for the public address (admitted by the allow list); 127.0.0.1 is inside.
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    inside, outside = _receivers_on_one_port()
    try:
        name = "rebind.promptyard.test"
        delivery = _delivery_to(f"http://{name}:{inside.port}/hook")
        resolutions = _resolver(monkeypatch, name, ["127.0.0.2", "127.0.0.1"])
        row = _attempt(delivery)
        assert inside.received == [], "the request reached the inside server"
        assert (row.status, row.response_code, row.last_error) == ("succeeded", 200, "")
        assert resolutions == ["127.0.0.2"]  # one resolution, for the check and the connection
        assert [got["headers"]["Host"] for got in outside.received] == [f"{name}:{inside.port}"]
    finally:
        inside.close()
        outside.close()


def test_should_verify_tls_against_the_urls_name_while_connecting_to_the_checked_address(
        monkeypatch, settings, tmp_path):
    settings.WEBHOOK_ALLOW_HTTP = False
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    authority = Authority(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))  # the client trusts the test's CA
    server_names: list[str] = []
    tls = authority.server_context("hooks.promptyard.test")
    tls.sni_callback = lambda sock, server_name, context: server_names.append(server_name)
    inside, outside = _receivers_on_one_port(tls=tls)
    try:
        _resolver(monkeypatch, "hooks.promptyard.test", ["127.0.0.2"])
        other = _resolver(monkeypatch, "other.promptyard.test", ["127.0.0.2"])
        good = _attempt(_delivery_to(f"https://hooks.promptyard.test:{inside.port}/hook"))
        assert (good.status, good.response_code, good.last_error) == ("succeeded", 200, "")
        assert server_names == ["hooks.promptyard.test"]
        assert outside.received[0]["headers"]["Host"] == f"hooks.promptyard.test:{inside.port}"
        # The same address under a name its certificate does not carry: refused by the client.
        wrong = _attempt(_delivery_to(f"https://other.promptyard.test:{inside.port}/hook"))
        assert other == ["127.0.0.2"] and wrong.response_code is None and len(outside.received) == 1
        assert "ConnectError" in wrong.last_error and "certificate" in wrong.last_error.lower()
        # Plain http is refused at the attempt too, once WEBHOOK_ALLOW_HTTP is off.
        plain = _attempt(_delivery_to(inside.url))
        assert "https" in plain.last_error and inside.received == []
    finally:
        inside.close()
        outside.close()


@pytest.mark.parametrize("url", [
    "https://[64:ff9b::7f00:1]/h",            # NAT64 of 127.0.0.1
    "https://[64:ff9b::a9fe:a9fe]/h",         # NAT64 of the metadata service 169.254.169.254
    "https://[64:ff9b:1::5db8:d822]/h",       # NAT64 local-use prefix: a translator inside some network
    "https://[2002:a00:1::1]/h",              # 6to4 of 10.0.0.1
    "https://[2002:7f00:1::]/h",              # 6to4 of 127.0.0.1
    "https://[::7f00:1]/h",                   # IPv4-compatible ::127.0.0.1
    "https://[::a9fe:a9fe]/h",                # IPv4-compatible ::169.254.169.254
    "https://[::ffff:a9fe:a9fe]/h",           # IPv4-mapped 169.254.169.254
    "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/h",  # Teredo, client 127.0.0.1
])
def test_should_refuse_ipv6_forms_that_carry_an_inside_ipv4_address(auth_client, url):
    response = auth_client.post("/api/webhooks", {"url": url, "events": ["version.created"]}, format="json")
    assert response.status_code == 400, response.content
    assert (response.json()["error"]["code"], response.json()["error"]["field"]) == ("webhook_url_forbidden",
                                                                                      "url")


def test_should_accept_ipv6_forms_of_a_public_ipv4_and_refuse_plain_http_by_default(auth_client, settings):
    def create(url):
        return auth_client.post("/api/webhooks", {"url": url, "events": ["version.created"]}, format="json")

    for url in ("https://[64:ff9b::5db8:d822]/h", "https://[2002:5db8:d822::1]/h"):  # 93.184.216.34
        assert create(url).status_code == 201, url
    settings.WEBHOOK_ALLOW_HTTP = False  # the default
    refused = create("http://93.184.216.34/h")
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_webhook_url")
    assert "https" in refused.json()["error"]["message"]


def test_should_end_an_attempt_at_its_total_deadline_however_slowly_the_answer_trickles(settings):
    settings.WEBHOOK_ATTEMPT_TIMEOUT_S = 1.0  # each byte comes well within WEBHOOK_TIMEOUT_S (5 s)
    server = RawServer(trickle(seconds=30))  # a 30 s answer, one byte every 0.2 s
    try:
        started = time.monotonic()
        row = _attempt(_delivery_to(f"http://127.0.0.1:{server.port}/hook"))
        took = time.monotonic() - started
        assert "AttemptTimeout" in row.last_error and "over 1 s" in row.last_error, row.last_error
        # The bound named by the setting (1 s); 8 s leaves room for a loaded machine, far under the 30 s.
        assert took < 8, took
        assert wait_for(server.cut.is_set, timeout=10, what="the receiver to see the connection closed")
    finally:
        server.close()


def test_should_read_no_more_of_an_answer_than_the_cap(settings):
    settings.WEBHOOK_MAX_RESPONSE_BYTES = 4096
    flood = RawServer(endless_headers(limit=1 << 20))
    body = RawServer(endless_body(limit=128 << 20))
    try:
        row = _attempt(_delivery_to(f"http://127.0.0.1:{flood.port}/hook"))
        assert "AnswerTooLarge" in row.last_error and "4096 bytes" in row.last_error, row.last_error
        # A 2xx is known from its head: the 128 MiB body is not read (the socket buffers took a few MiB).
        ok = _attempt(_delivery_to(f"http://127.0.0.1:{body.port}/hook"))
        assert (ok.status, ok.response_code) == ("succeeded", 200)
        assert wait_for(body.cut.is_set, timeout=10, what="the receiver to see the connection closed")
        assert body.sent < 32 << 20, body.sent
    finally:
        flood.close()
        body.close()


def test_should_sign_each_attempt_when_it_is_sent_for_the_sdk_verifier(settings):
    secret = "whsec_" + uuid.uuid4().hex
    receiver = VerifyingReceiver(secret)
    try:
        fresh = _attempt(_delivery_to(receiver.url, secret))
        assert (fresh.status, fresh.response_code) == ("succeeded", 200)
        # A retry an hour after the event (its row written then): signed now, so still accepted.
        late = _delivery_to(receiver.url, secret)
        WebhookDelivery.objects.filter(pk=late.pk).update(timestamp=int(time.time()) - 3600)
        retried = _attempt(late)
        assert (retried.status, retried.response_code, retried.last_error) == ("succeeded", 200, "")
        assert [(event["id"], code) for event, code, _, _ in receiver.results] == [("e1", None), ("e1", None)]
        sent = receiver.results[-1][2]
        assert abs(int(sent["Promptyard-Timestamp"]) - time.time()) <= 5
        assert (retried.timestamp, retried.signature) == (int(sent["Promptyard-Timestamp"]),
                                                          sent["Promptyard-Signature"])
    finally:
        receiver.close()


def test_should_have_the_sdk_verifier_refuse_tampered_and_replayed_deliveries():
    secret = "whsec_" + uuid.uuid4().hex
    receiver = VerifyingReceiver(secret)
    try:
        assert _attempt(_delivery_to(receiver.url, secret)).status == "succeeded"
        _, _, headers, body = receiver.results[0]

        def replay(body: bytes, **changed) -> int:
            sent = {k: v for k, v in headers.items() if k.startswith("Promptyard-")} | changed
            return httpx.post(receiver.url, content=body, headers=sent).status_code

        assert replay(body) == 200  # within the tolerance: de-duplicate on the event id
        assert replay(body.replace(b"e1", b"e2")) == 400
        old = int(time.time()) - 600  # a delivery captured 10 minutes ago, genuinely signed then
        assert replay(body, **{"Promptyard-Timestamp": str(old),
                               "Promptyard-Signature": sign(secret=secret, timestamp=old, body=body)}) == 400
        later = str(int(headers["Promptyard-Timestamp"]) + 1)
        assert replay(body, **{"Promptyard-Timestamp": later}) == 400  # the timestamp is signed too
        assert [code for _, code, _, _ in receiver.results[1:]] == [
            None, "webhook_signature_mismatch", "webhook_timestamp_outside_tolerance",
            "webhook_signature_mismatch"]
    finally:
        receiver.close()


def test_should_have_the_sdk_verifier_take_rotated_secrets_and_several_signatures():
    body, now = b'{"id":"e1"}', int(time.time())
    signed = sign(secret="whsec_new", timestamp=now, body=body)
    headers = {"promptyard-timestamp": str(now), "promptyard-signature": signed}  # any case
    assert verify(body, headers, ["whsec_old", "whsec_new"]) == {"id": "e1"}
    both = {**headers, "promptyard-signature": f"v1={'0' * 64}, {signed}"}
    assert verify(body, both, "whsec_new")["id"] == "e1"
    refusals = {
        "webhook_signature_mismatch": (body, headers, "whsec_old", 300),
        "webhook_timestamp_outside_tolerance": (
            body, {**headers, "promptyard-timestamp": str(now + 900),
                   "promptyard-signature": sign(secret="whsec_new", timestamp=now + 900, body=body)},
            "whsec_new", 300),
        "webhook_header_missing": (body, {"promptyard-timestamp": str(now)}, "whsec_new", 300),
        "webhook_timestamp_invalid": (body, {**headers, "promptyard-timestamp": "soon"}, "whsec_new", 300),
    }
    for code, (payload, sent, secret, tolerance) in refusals.items():
        with pytest.raises(WebhookVerificationError) as refused:
            verify(payload, sent, secret, tolerance_s=tolerance)
        assert refused.value.code == code
