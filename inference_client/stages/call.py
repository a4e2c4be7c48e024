"""Who is calling, and the one request on its way through the stages."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from django.contrib.auth.base_user import AbstractBaseUser

from accounts.models import ApiKey
from core.vocabulary import Priority
from inference_client.admission import Decision
from inference_client.completion import Completion
from inference_client.request_params import ChatParams
from inference_protocol.config import ConfigSnapshot


@dataclasses.dataclass(frozen=True)
class SessionCaller:
    """A signed-in browser user on /v1, with their account's tier
    (accounts.keycache.cached_account_tier: no database read per request)."""
    user: AbstractBaseUser
    tier: str


@dataclasses.dataclass(frozen=True)
class Principal:
    user: AbstractBaseUser
    api_key: ApiKey | None
    tier: str
    scope: str      # rate buckets and idempotency keys: per API key (or per user)
    tenant: str     # cache entries: per account

    @classmethod
    def of(cls, caller: ApiKey | SessionCaller) -> Principal:
        if isinstance(caller, ApiKey):
            return cls(caller.user, caller, caller.tier, f"k{caller.pk}", f"u{caller.user_id}")
        user = caller.user  # a browser session: its account's limits, in buckets of its own
        return cls(user, None, caller.tier, f"u{user.pk}", f"u{user.pk}")


@dataclasses.dataclass(slots=True)
class Call:
    """A validated request and what each stage found for it (inference_client.stages)."""

    principal: Principal
    model: str
    messages: list[dict]
    params: ChatParams
    snapshot: ConfigSnapshot        # one config for the whole request
    use_redis: bool
    kind: str                       # "chat", "text" or "embed"
    stream: bool
    lane: str                       # "interactive" or "batch" (inference_client.batch_lane)
    request_id: str
    created: int
    timeout_s: float
    idempotency_key: str | None
    fingerprint: str | None
    prompt_ref: dict                # the saved prompt version that ran, for the usage record
    record_sink: Callable[[dict], None] | None
    # cache
    exact_key: str | None = None
    semantic_scope: str | None = None
    hit: dict | None = None         # a cached result
    cache_hit: str = ""             # "", "exact", "semantic"
    # admit
    estimate: int = 0               # the tokens charged up front (0 for a cached answer)
    decision: Decision | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    version: str = ""
    served: str = ""                # the model name the worker is asked for (model@version)
    # milliseconds per stage, for Server-Timing
    timings: dict[str, float] = dataclasses.field(default_factory=dict)

    def lap(self, stage: str, since: float) -> float:
        """Time ``stage`` from ``since`` (perf_counter); the end, for the next stage."""
        now = time.perf_counter()
        self.timings[stage] = (now - since) * 1000
        return now

    def completion(self, **extra) -> Completion:
        """The request's own completion (not a retry's)."""
        params = self.params
        return Completion(id=self.answer_id(self.request_id), request_id=self.request_id, model=self.model,
                          created=self.created, include_usage=params.include_usage,
                          keep_on_disconnect=bool(self.idempotency_key), **self.shape(), **extra)

    @property
    def priority(self) -> str:
        """Its queue priority on the wire (core.vocabulary.Priority)."""
        return Priority.of(self.principal.tier, batch=self.lane == "batch").wire

    def answer_id(self, request_id: str) -> str:
        return f"{'cmpl' if self.kind == 'text' else 'chatcmpl'}-{request_id}"

    def shape(self) -> dict:
        """How the answer renders (Completion's fields)."""
        params = self.params
        return dict(kind=self.kind, n=params.n, logprobs=params.logprobs is not None, tools=params.tools,
                    echo=self.messages[-1]["content"] if params.echo else None)
