"""Config documents on a node: verify, refuse with a reason, apply atomically
(inference_protocol.config). No service needed."""

import dataclasses
import logging
import threading

import pytest

from inference_protocol import config, config_document
from inference_protocol.signing import generate_keypair

pytestmark = pytest.mark.any_profile

PRIVATE, PUBLIC = generate_keypair()
CONTENT = {
    "models": {"m": {"engine": "fixed_cost", "max_inputs": 4, "call_s": 0.01}},
    "rate_limits": {"free": {"requests_per_min": 60, "tokens_per_min": 40000},
                    "paid": {"requests_per_min": 3000, "tokens_per_min": 2000000}},
    "capacity": {k: ({"green": 1.5, "yellow": 1.0, "red": 0.9} if k in ("headroom", "free_share") else 1)
                 for k in config_document.CAPACITY_KEYS},
    "rollout": {k: 1 for k in config_document.ROLLOUT_KEYS},
}


def doc(number: int, content=None, key=PRIVATE, **changes) -> config_document.ConfigDocument:
    d = config_document.ConfigDocument(number=number, parent=number - 1, content=content or CONTENT,
                              created_at="2026-12-01T00:00:00+00:00", created_by="test")
    return dataclasses.replace(d.signed(key), **changes) if key else dataclasses.replace(d, **changes)


@pytest.fixture
def node():
    return config.ConfigState(lambda: CONTENT, lambda: PUBLIC)


def test_should_apply_a_signed_newer_document_as_one_new_snapshot(node):
    before = node.snapshot
    assert node.offer(doc(1).to_json())
    assert node.snapshot is not before and node.snapshot.number == 1 and node.snapshot.parent == 0
    assert before.number == 0  # the old snapshot object is untouched: readers holding it see it whole


@pytest.mark.parametrize("bad, reason", [
    (lambda: doc(1, key=None), "unsigned"),
    (lambda: doc(1, key=generate_keypair()[0]), "does not verify"),
    (lambda: doc(1, created_by="someone else"), "does not verify"),  # tampered after signing
    (lambda: doc(1, content={**CONTENT, "rate_limits": {}}), "invalid"),
    (lambda: b"{not json", "malformed"),
])
def test_should_refuse_unsigned_wrongly_signed_tampered_or_invalid_documents_with_a_logged_reason(
        node, caplog, bad, reason):
    raw = bad()
    with caplog.at_level(logging.WARNING, logger="inference.config"):
        assert not node.offer(raw if isinstance(raw, bytes) else raw.to_json())
    assert node.snapshot.number == 0
    assert reason in node.last_refusal and reason in caplog.text


def test_should_refuse_an_older_document(node, caplog):
    assert node.offer(doc(3))
    with caplog.at_level(logging.WARNING, logger="inference.config"):
        assert not node.offer(doc(2))
    assert node.snapshot.number == 3 and "older than the applied 3" in caplog.text


def test_should_refuse_every_document_without_a_public_key(caplog):
    blind = config.ConfigState(lambda: CONTENT, lambda: None)
    assert not blind.offer(doc(1)) and "CONFIG_PUBLIC_KEY" in blind.last_refusal


def test_should_never_show_a_reader_a_mix_of_two_documents(node):
    """Writers swap snapshots while readers read two fields of one snapshot: each
    pair belongs to one document (the free and paid limits move together)."""
    stop, mixed = threading.Event(), []

    def content(n):
        return {**CONTENT, "rate_limits": {"free": {"requests_per_min": n, "tokens_per_min": n},
                                           "paid": {"requests_per_min": n, "tokens_per_min": n}}}
    docs = [doc(n, content(n)) for n in range(1, 301)]

    def read():
        while not stop.is_set():
            snap = node.snapshot
            limits = snap.rate_limits
            free, paid = limits["free"]["requests_per_min"], limits["paid"]["requests_per_min"]
            if snap.number and (free != paid or free != snap.number):
                mixed.append((snap.number, free, paid))
    readers = [threading.Thread(target=read) for _ in range(2)]
    for r in readers:
        r.start()
    for d in docs:
        node.offer(d)
    stop.set()
    for r in readers:
        r.join()
    assert node.snapshot.number == 300 and mixed == []


def test_should_name_every_problem_of_an_invalid_content():
    bad = {**CONTENT, "models": {"m": {"engine": "nope", "versions": {"v1": 60, "v2": 30}}},
           "rate_limits": {**CONTENT["rate_limits"], "free": {"requests_per_min": -1, "tokens_per_min": 5}}}
    problems = config_document.check_content(bad, published=lambda model, version: version == "v1")
    assert any("unknown engine 'nope'" in p for p in problems)
    assert any("weights sum to 90, not 100" in p for p in problems)
    assert any("m@v2 was never published" in p for p in problems)
    assert any("rate_limits.free.requests_per_min: must not be negative" in p for p in problems)


def test_should_name_unknown_and_fractional_scheduler_settings():
    scheduler = {"max_batch": 4, "max_batch_size": 2.5, "max_wait_ms": 5.5}
    bad = {**CONTENT, "models": {"m": {"engine": "fixed_cost", "scheduler": scheduler}}}
    problems = config_document.check_content(bad)
    assert any("models.m.scheduler.max_batch: unknown setting" in p for p in problems)
    assert any("models.m.scheduler.max_batch_size: must be an integer" in p for p in problems)
    assert len(problems) == 2


def test_should_know_the_same_scheduler_settings_as_the_worker():
    from inference_worker.requests import SchedulerConfig

    fields = {f.name: f for f in dataclasses.fields(SchedulerConfig)}
    assert set(config_document.SCHEDULER_KEYS) == set(fields)
    assert set(config_document.SCHEDULER_INTEGERS) == {k for k, f in fields.items() if "int" in str(f.type)}


def test_should_know_the_same_engines_as_the_worker():
    from inference_worker.engines import ENGINES

    assert set(config_document.ENGINE_NAMES) == set(ENGINES)


def test_should_start_no_watcher_without_redis_on_every_call(settings, monkeypatch):
    # The first call marks the process as watcher-less; later calls said so too
    # only by accident (they returned that mark, not None).
    settings.REDIS_URL = ""
    monkeypatch.setattr(config, "_watcher", None)
    assert config.start_watcher() is None
    assert config.start_watcher() is None
