"""UpstreamEngine: forwards requests to an OpenAI-compatible server.

For users who already run vLLM, TGI, or a hosted API. This engine owns no
device, so "a step" cannot mean one forward pass. Design:

- When a sequence first appears in a step, it opens a streaming
  ``POST {base_url}/chat/completions`` for it, as a task on the engine's one
  event loop thread (upstream_http: keep-alive connections, httptools'
  parser), and each SSE delta goes into that sequence's buffer.
- ``step`` waits at most ``poll_s`` for any of its sequences to have news,
  then returns, per sequence, the text that arrived since the last step (often
  several tokens, sometimes none) and whether the upstream finished it.
  The scheduler's loop and the upstream's own batching do the rest; the
  engine's ``max_batch_size`` bounds open streams (and connections).
- Errors surface from ``step`` for the sequence that hit them, without
  consuming other sequences' buffered text, so the scheduler's batch split
  isolates the failed request and the others carry on. An upstream 429
  raises ``UpstreamRateLimited`` with the upstream's Retry-After in seconds.
- Only connection errors (connect refused / connect timeout: nothing was
  sent) are retried (``connect_retries``, exponential backoff); a failure
  after the request was sent is not retried, because the upstream may have
  started generating.
- An event's data may span several ``data:`` lines; events without data
  (keep-alives) are skipped. After ``[DONE]`` the body is read to its end, so
  the connection goes back to the pool.
- Error messages reach the client (event log, /v1 body), so they are generic
  and carry a stable code: never the base URL, the API key or the upstream's
  body. What went wrong in detail is logged here, on the worker.
- The upstream's tokenizer is not local: ``token_ids`` stay empty, and the
  upstream's own usage (``stream_options.include_usage``) is stored in
  ``seq.meta["usage"]`` when the stream ends; the worker reports those counts
  (inference_worker.generation), so usage records and token settlement are exact.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json
import logging
import threading
import time
from typing import Any

from . import upstream_http
from .base import Capacity, Engine, EngineError, EngineLoadError, Sequence, StepResult, check_messages

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



_scan_json = json.JSONDecoder().raw_decode


def _loads(data: bytes) -> Any:
    """json.loads, without its per-call detours for the usual event (one JSON object)."""
    text = data.decode()
    obj, end = _scan_json(text)
    return obj if end == len(text) else json.loads(text)  # trailing blanks; garbage raises


# An idle connection closes after this long: below uvicorn's 5 s keep-alive, so a reuse
# does not race the server's close.
IDLE_S = 2.0


@dataclasses.dataclass
class _Stream:
    seq: Sequence
    chunks: list[str] = dataclasses.field(default_factory=list)
    done: bool = False
    finish_reason: str | None = None
    error: EngineError | None = None
    cancelled: bool = False
    ended: bool = False  # its task is over (and its connection closed or pooled)
    response: upstream_http.Connection | None = None  # once the answer's headers came
    task: asyncio.Task[None] | None = None
    thread: _Task | None = None


class _Task:
    """A stream's task seen from other threads: join() and is_alive(), as on the
    thread each stream once had."""

    def __init__(self, cond: threading.Condition, st: _Stream):
        self._cond, self._st = cond, st

    def join(self, timeout: float | None = None) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._st.ended, timeout)

    def is_alive(self) -> bool:
        return not self._st.ended


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
        self._loop = upstream_http.LoopThread(f"upstream-{self.model_name}")
        try:
            self._http = upstream_http.Client(
                self._loop.loop, self.base_url, headers, connect_timeout=connect_timeout,
                read_timeout=read_timeout, connect_retries=connect_retries,
                max_connections=max_batch_size + 1, idle_s=IDLE_S)  # + 1: health() when full
        except ValueError as exc:
            self._loop.stop()
            raise EngineLoadError(f"upstream engine: {exc}") from None
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
        starting: list[_Stream] = []
        try:
            for seq in seqs:
                if seq.id not in self._streams:
                    self.prepare(seq)
                    if len(self._streams) >= self.max_batch_size:
                        raise EngineError(
                            f"more than {self.max_batch_size} open streams", code="batch_full"
                        )
                    st = self._streams[seq.id] = _Stream(seq=seq)
                    st.thread = _Task(self._cond, st)
                    starting.append(st)
        finally:
            if starting:  # one wake-up of the loop for all of them
                self._loop.loop.call_soon_threadsafe(self._start, starting)
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
        if not st.done and not st.ended:
            # Its task closes its connection (never pooled mid-answer) and ends quietly.
            self._loop.loop.call_soon_threadsafe(self._cancel, st)

    def health(self) -> bool:
        async def status() -> int:
            async with asyncio.timeout(2.0):
                conn = await self._http.request("GET", "models")
                try:
                    await conn.read()
                finally:
                    conn.close()  # no-op once read() pooled it
                return conn.status
        try:
            return self._loop.run(status(), timeout=10.0) == 200
        except Exception:
            return False

    def close(self) -> None:
        for sid in list(self._streams):
            self.release(sid)

        async def shut() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            await asyncio.gather(*tasks, return_exceptions=True)
            self._http.close()
        try:
            self._loop.run(shut(), timeout=5.0)
        except Exception as exc:
            logger.warning("upstream %s: its streams did not end on close: %r", self.base_url, exc)
        finally:
            self._loop.stop()

    # -- streams, on the loop's thread ---------------------------------------

    def _start(self, streams: list[_Stream]) -> None:
        for st in streams:
            if st.cancelled:
                self._set(st, ended=True)
            else:
                st.task = self._loop.loop.create_task(self._run(st))

    def _cancel(self, st: _Stream) -> None:
        if st.task is not None:
            st.task.cancel()

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

    async def _run(self, st: _Stream) -> None:
        error: EngineError | None = None
        text = ""
        try:
            text = await self._stream(st)
        except asyncio.CancelledError:
            pass  # released: nobody waits for it
        except EngineError as exc:
            error = exc
        except upstream_http.ReadTimeout as exc:
            logger.warning("upstream %s timed out on %s: %r", self.base_url, st.seq.id, exc)
            error = UpstreamError("The upstream server timed out.", code="upstream_timeout")
        except Exception as exc:
            logger.warning("upstream %s stream failed on %s: %r", self.base_url, st.seq.id, exc)
            error = UpstreamError("The upstream server's stream failed.")
        self._set(st, text=text, done=error is None and not st.cancelled, error=error, ended=True)

    async def _stream(self, st: _Stream) -> str:
        """The stream's deltas go to ``st``, but for the last read's: returned."""
        try:
            conn = await self._http.request("POST", "chat/completions", self._body(st.seq),
                                            accept="text/event-stream")
        except upstream_http.ConnectFailed as exc:
            logger.warning("cannot connect to upstream %s after %d attempts: %s", self.base_url,
                           self.connect_retries + 1, exc)
            raise UpstreamUnavailable("The upstream server is unreachable.") from exc
        st.response = conn
        try:
            return await self._read(st, conn)
        except BaseException:
            conn.close()  # mid-answer (an error, or released): never back to the pool
            raise
        finally:
            conn.release()  # a no-op once read to its end

    async def _read(self, st: _Stream, conn: upstream_http.Connection) -> str:
        if conn.status == 429:
            await conn.read()
            retry_after = parse_retry_after(conn.headers.get(b"retry-after", b"").decode("latin-1"))
            raise UpstreamRateLimited("The upstream server rate limited this request.",
                                      retry_after=retry_after)
        if conn.status >= 400:
            detail = (await conn.read(500)).decode("utf-8", errors="replace")
            logger.warning("upstream %s answered %d: %s", self.base_url, conn.status, detail)
            raise UpstreamError(f"The upstream server refused the request (HTTP {conn.status}).",
                                status=conn.status)
        events = upstream_http.SSEDecoder()
        texts: list[str] = []
        while (data := await conn.next_body()) is not None:
            if self._parse(st, events.feed(data), texts):
                break
            if texts:  # one wake-up of the scheduler per read
                self._set(st, text="".join(texts))
                texts.clear()
        if not conn.complete:  # the rest of the body after [DONE]: usually there already
            self._set(st, text="".join(texts), done=True)
            texts.clear()
            try:
                await conn.drain()
            except upstream_http.HttpError:
                pass  # the answer was whole: only the connection is lost (release closes it)
        return "".join(texts)

    def _parse(self, st: _Stream, events: list[bytes], texts: list[str]) -> bool:
        """Append the events' deltas to ``texts``; True at [DONE]."""
        for data in events:
            if not data:
                continue  # an event without data (a keep-alive ping)
            if data == b"[DONE]":
                return True
            try:
                chunk = _loads(data)
            except ValueError as exc:
                logger.warning("upstream %s sent a malformed chunk: %.200s", self.base_url,
                               data.decode("utf-8", errors="replace"))
                raise UpstreamError("The upstream server sent a malformed event.") from exc
            if chunk.get("error"):
                logger.warning("upstream %s reported an error: %.500s", self.base_url, chunk["error"])
                raise UpstreamError("The upstream server reported an error.")
            if chunk.get("usage"):
                st.seq.meta["usage"] = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = (choice.get("delta") or {}).get("content")
                if delta:
                    texts.append(delta)
                if choice.get("finish_reason"):
                    st.finish_reason = choice["finish_reason"]
        return False

    def _set(self, st: _Stream, *, text: str | None = None, done: bool = False,
             error: EngineError | None = None, ended: bool = False) -> None:
        with self._cond:
            if text:
                st.chunks.append(text)
            if done:
                st.done = True
            if error is not None and not st.cancelled:
                st.error = error
            if ended:
                st.ended = True
            self._cond.notify_all()
