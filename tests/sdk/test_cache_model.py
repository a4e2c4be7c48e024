"""A hypothesis state machine of the SDK cache: a model server (label moved,
removed, set again; answering, 502, timing out) behind httpx's MockTransport,
a manual clock, and background refreshes the machine runs when it chooses.
Every answer of get_prompt is checked against the contract in promptyard.cache."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from promptyard import LabelNotFound, Promptyard, ServerUnavailable

from tests.sdk.conftest import ManualClock

pytestmark = pytest.mark.any_profile  # no service involved

TTL, MAX_STALE = 60.0, 120.0
PROMPT = "11111111-1111-1111-1111-111111111111"


class ModelServer:
    def __init__(self):
        self.version: int | None = 1  # what "production" points at; None: removed
        self.mode = "up"  # up | 502 | timeout
        self.calls = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.mode == "502":
            return httpx.Response(502, text="<html>Bad Gateway</html>")
        if self.mode == "timeout":
            raise httpx.ReadTimeout("timed out", request=request)
        if self.version is None:
            return httpx.Response(404, json={"error": {"code": "label_not_found", "message": "No label."}})
        return httpx.Response(200, json={"name": "production", "version": {
            "id": f"v{self.version}", "number": self.version, "model": "m", "system": "",
            "variables": {}, "temperature": None, "max_tokens": None, "top_p": None, "stop": [],
            "response_schema": None, "body": f"body {self.version}", "body_url": "/x"}})


class CacheMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.server = ModelServer()
        self.clock = ManualClock()
        self.pending: list = []
        self.py = Promptyard("http://model", "key", ttl=TTL, max_stale=MAX_STALE, clock=self.clock,
                             spawn=self.pending.append, transport=httpx.MockTransport(self.server.handle))
        # What the model says about the last answer the server gave:
        # (clock time of the request, version or None for removed)
        self.answered: tuple[float, int | None] | None = None

    def _fetch_outcome(self, at: float) -> None:
        if self.server.mode == "up":
            if self.answered is None or at >= self.answered[0]:
                self.answered = (at, self.server.version)

    @rule(seconds=st.sampled_from([1.0, 30.0, 59.0, 61.0, 119.0, 200.0]))
    def advance(self, seconds):
        self.clock.advance(seconds)

    @rule(version=st.integers(1, 4))
    def move_label(self, version):
        self.server.version = version

    @rule()
    def remove_label(self):
        self.server.version = None

    @rule(mode=st.sampled_from(["up", "502", "timeout"]))
    def server_mode(self, mode):
        self.server.mode = mode

    @precondition(lambda self: self.pending)
    @rule()
    def run_refresh(self):
        at = self.clock()
        self.pending.pop(0)()
        self._fetch_outcome(at)

    @rule(with_fallback=st.booleans())
    def get(self, with_fallback):
        now = self.clock()
        calls = self.server.calls
        before = self.answered
        try:
            result = self.py.get_prompt(PROMPT, fallback="fb" if with_fallback else None)
        except LabelNotFound:
            result = None
            outcome = "gone"
        except ServerUnavailable:
            result = None
            outcome = "unavailable"
        else:
            outcome = result.source
        fetched = self.server.calls > calls
        if fetched:
            self._fetch_outcome(now)
        age = None if before is None else now - before[0]

        if outcome == "server":
            assert fetched and result.id == f"v{self.server.version}"
        elif outcome in ("cache", "stale"):
            # A cached copy is what the last answer said, and never past the bound.
            assert not fetched and before is not None and before[1] is not None
            assert result.id == f"v{before[1]}"
            assert age < (TTL if outcome == "cache" else TTL + MAX_STALE)
            if outcome == "stale":
                assert age >= TTL
        elif outcome == "gone":
            # Only when the newest answer said removed: never an old version after it.
            assert (fetched and self.server.version is None) or (
                not fetched and before is not None and before[1] is None and age < TTL)
        else:  # "fallback" or "unavailable": the server could not answer and nothing usable is cached
            assert fetched and self.server.mode != "up"
            assert (before is None or (before[1] is None and age >= TTL)
                    or (before[1] is not None and age >= TTL + MAX_STALE))
            assert (outcome == "fallback") == with_fallback
            if outcome == "fallback":
                assert result.template == "fb" and result.error

    @invariant()
    def one_refresh_at_a_time(self):
        assert len(self.pending) <= 1

    def teardown(self):
        self.py.close()


CacheMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_cache_state_machine = CacheMachine.TestCase
