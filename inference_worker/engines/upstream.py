"""UpstreamEngine: forwards requests to an OpenAI-compatible server.

For users who already run vLLM, TGI, or a hosted API. This engine owns no
device, so "a step" cannot mean one forward pass. Design:

- When a sequence first appears in a step, a background thread opens a
  streaming ``POST {base_url}/chat/completions`` for it and pushes each SSE
  delta into that sequence's buffer.
- ``step`` waits at most ``poll_s`` for any of its sequences to have news,
  then returns, per sequence, the text that arrived since the last step (often
  several tokens, sometimes none) and whether the upstream finished it.
  The scheduler's loop and the upstream's own batching do the rest; the
  engine's ``max_batch_size`` bounds open streams.
- Errors surface from ``step`` for the sequence that hit them, without
  consuming other sequences' buffered text, so the scheduler's batch split
  isolates the failed request and the others carry on. An upstream 429
  raises ``UpstreamRateLimited`` with the upstream's Retry-After in seconds.
- Only connection errors (connect refused / connect timeout: nothing was
  sent) are retried, by httpx's transport (``retries``, exponential backoff);
  a failure after the request was sent is not retried, because the upstream
  may have started generating.
- Events are parsed by httpx-sse (an event's data may span several
  ``data:`` lines).
- Error messages reach the client (event log, /v1 body), so they are generic
  and carry a stable code: never the base URL, the API key or the upstream's
  body. What went wrong in detail is logged here, on the worker.
- The upstream's tokenizer is not local: ``token_ids`` stay empty, and the
  upstream's own usage (``stream_options.include_usage``) is stored in
  ``seq.meta["usage"]`` when the stream ends; the worker reports those counts
  (inference_worker.generation), so usage records and token settlement are exact.
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import threading
import time

import httpx
from httpx_sse import EventSource

from .base import Capacity, Engine, EngineError, Sequence, StepResult, check_messages

logger = logging.getLogger(__name__)


class UpstreamError(EngineError):
    code = "upstream_error"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        super().__init__(message, code=code)
        self.status = status


class UpstreamUnavailable(UpstreamError):
    """Could not connect, even after retries."""

    code = "upstream_unavailable"


class UpstreamRateLimited(UpstreamError):
    """The upstream answered 429; ``retry_after`` is in seconds (None if not given)."""

    code = "upstream_rate_limited"

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message, status=429)
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After is either delay-seconds or an HTTP date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclasses.dataclass
class _Stream:
    seq: Sequence
    chunks: list[str] = dataclasses.field(default_factory=list)
    done: bool = False
    finish_reason: str | None = None
    error: EngineError | None = None
    cancelled: bool = False
    response: httpx.Response | None = None
    thread: threading.Thread | None = None


class UpstreamEngine(Engine):
    """Options: base_url (e.g. "http://vllm:8000/v1", required), model (the
    upstream's model name; default: this model's name), api_key, timeouts in
    seconds (connect_timeout, read_timeout: longest gap between chunks),
    connect_retries, max_batch_size, context_window, poll_s."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str | None = None,
        model_name: str | None = None,
        api_key: str | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        connect_retries: int = 2,
        max_batch_size: int = 64,
        context_window: int = 8192,
        poll_s: float = 0.05,
    ):
        self.model_name = model_name or model or ""
        self._upstream_model = model
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=self.base_url + "/",
            headers=headers,
            timeout=httpx.Timeout(connect=connect_timeout, read=read_timeout,
                                  write=connect_timeout, pool=connect_timeout),
            transport=httpx.HTTPTransport(
                retries=connect_retries,
                limits=httpx.Limits(max_connections=max_batch_size,
                                    max_keepalive_connections=max_batch_size)),
        )
        self.connect_retries = connect_retries
        self.max_batch_size = max_batch_size
        self.context_window = context_window
        self.poll_s = poll_s
        self._streams: dict[str, _Stream] = {}
        self._cond = threading.Condition()

    @property
    def capacity(self) -> Capacity:
        return Capacity(
            max_batch_size=self.max_batch_size,
            max_batch_tokens=self.max_batch_size * self.context_window,
            context_window=self.context_window,
        )

    def prepare(self, seq: Sequence) -> None:
        check_messages(seq.messages)

    # -- step --------------------------------------------------------------

    def step(self, running: list[Sequence], new: list[Sequence]) -> list[StepResult]:
        seqs = running + new
        for seq in seqs:
            if seq.id not in self._streams:
                self.prepare(seq)
                if len(self._streams) >= self.max_batch_size:
                    raise EngineError(
                        f"more than {self.max_batch_size} open streams", code="batch_full"
                    )
                self._start(seq)
        streams = [self._streams[s.id] for s in seqs]
        with self._cond:
            self._cond.wait_for(
                lambda: any(st.chunks or st.done or st.error for st in streams),
                timeout=self.poll_s,
            )
            # Raise before draining anything, so other sequences keep their text.
            for st in streams:
                if st.error is not None:
                    raise st.error
            results = []
            for st in streams:
                text, st.chunks = "".join(st.chunks), []
                finished = st.done
                results.append(StepResult(
                    seq_id=st.seq.id, text=text, finished=finished,
                    finish_reason=(st.finish_reason or "stop") if finished else None,
                ))
        return results

    def release(self, seq_id: str) -> None:
        st = self._streams.pop(seq_id, None)
        if st is None:
            return
        st.cancelled = True
        resp = st.response
        if resp is not None and not st.done:
            # Closing from here makes the reader thread's iteration fail; it
            # sees ``cancelled`` and exits quietly.
            try:
                resp.close()
            except Exception:
                pass

    def health(self) -> bool:
        try:
            return self._client.get("models", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def close(self) -> None:
        for sid in list(self._streams):
            self.release(sid)
        self._client.close()

    # -- background streams ------------------------------------------------

    def _start(self, seq: Sequence) -> None:
        st = _Stream(seq=seq)
        self._streams[seq.id] = st
        st.thread = threading.Thread(target=self._run, args=(st,), daemon=True,
                                     name=f"upstream-{seq.id}")
        st.thread.start()

    def _body(self, seq: Sequence) -> dict:
        p = seq.params
        body = {
            "model": self._upstream_model or self.model_name,
            "messages": seq.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "top_p": p.top_p,
        }
        if p.stop:
            body["stop"] = list(p.stop)
        if p.seed is not None:
            body["seed"] = p.seed
        return body

    def _run(self, st: _Stream) -> None:
        try:
            self._stream_with_retries(st)
        except EngineError as exc:
            self._set(st, error=exc)
        except httpx.TimeoutException as exc:
            logger.warning("upstream %s timed out on %s: %r", self.base_url, st.seq.id, exc)
            self._set(st, error=UpstreamError("The upstream server timed out.", code="upstream_timeout"))
        except Exception as exc:
            logger.warning("upstream %s stream failed on %s: %r", self.base_url, st.seq.id, exc)
            self._set(st, error=UpstreamError("The upstream server's stream failed."))

    def _stream_with_retries(self, st: _Stream) -> None:
        try:
            with self._client.stream("POST", "chat/completions", json=self._body(st.seq),
                                     headers={"Accept": "text/event-stream"}) as resp:
                st.response = resp
                self._read(st, resp)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            if st.cancelled:
                return
            logger.warning("cannot connect to upstream %s after %d attempts: %s", self.base_url,
                           self.connect_retries + 1, exc)
            raise UpstreamUnavailable("The upstream server is unreachable.") from exc
        except Exception:
            if st.cancelled:
                return
            raise

    def _read(self, st: _Stream, resp: httpx.Response) -> None:
        if resp.status_code == 429:
            resp.read()
            retry_after = parse_retry_after(resp.headers.get("retry-after"))
            raise UpstreamRateLimited("The upstream server rate limited this request.",
                                      retry_after=retry_after)
        if resp.status_code >= 400:
            detail = resp.read().decode("utf-8", errors="replace")[:500]
            logger.warning("upstream %s answered %d: %s", self.base_url, resp.status_code, detail)
            raise UpstreamError(f"The upstream server refused the request (HTTP {resp.status_code}).",
                                status=resp.status_code)
        for event in EventSource(resp).iter_sse():
            if st.cancelled:
                return
            if not event.data:
                continue  # an event without data (a keep-alive ping)
            if event.data == "[DONE]":
                break
            try:
                chunk = json.loads(event.data)
            except ValueError as exc:
                logger.warning("upstream %s sent a malformed chunk: %.200s", self.base_url, event.data)
                raise UpstreamError("The upstream server sent a malformed event.") from exc
            if chunk.get("error"):
                logger.warning("upstream %s reported an error: %.500s", self.base_url, chunk["error"])
                raise UpstreamError("The upstream server reported an error.")
            if chunk.get("usage"):
                st.seq.meta["usage"] = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = (choice.get("delta") or {}).get("content")
                if delta:
                    self._set(st, text=delta)
                if choice.get("finish_reason"):
                    st.finish_reason = choice["finish_reason"]
        self._set(st, done=True)

    def _set(self, st: _Stream, *, text: str | None = None, done: bool = False,
             error: EngineError | None = None) -> None:
        with self._cond:
            if text:
                st.chunks.append(text)
            if done:
                st.done = True
            if error is not None and not st.cancelled:
                st.error = error
            self._cond.notify_all()
