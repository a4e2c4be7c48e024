"""Running one step so that a failing sequence fails alone.

If ``engine.step`` raises (or breaks its contract), the batch is split in
halves and each half stepped again, recursively, so only the failing
sequence(s) get an error and the rest complete.
"""

from __future__ import annotations

import logging

from inference_worker.engines.base import Engine, EngineError, Sequence, StepResult
from inference_worker.requests import RequestFailed

log = logging.getLogger(__name__)


class IsolatingStepper:
    def __init__(self, engine: Engine, name: str):
        self.engine = engine
        self.name = name
        self.calls = 0  # engine calls, > steps when failing batches were split

    def step(self, running: list[Sequence], new: list[Sequence]
             ) -> tuple[dict[str, StepResult], dict[str, RequestFailed]]:
        results: dict[str, StepResult] = {}
        errors: dict[str, RequestFailed] = {}
        self._part(running, new, results, errors)
        return results, errors

    def _part(self, running: list[Sequence], new: list[Sequence],
              results: dict[str, StepResult], errors: dict[str, RequestFailed]) -> None:
        self.calls += 1
        try:
            out = self.engine.step(running, new)
            by_id = {r.seq_id: r for r in out}
            expected = {s.id for s in running} | {s.id for s in new}
            if len(out) != len(expected) or set(by_id) != expected:
                raise EngineError(f"engine returned {len(out)} results for {len(expected)} "
                                  "sequences", code="engine_protocol_error")
        except Exception as exc:  # any engine failure: isolate, never crash the loop
            tagged = [(s, False) for s in running] + [(s, True) for s in new]
            if len(tagged) == 1:
                errors[tagged[0][0].id] = request_error(exc)
                log.warning("%s: request %s failed alone: %r", self.name, tagged[0][0].id, exc)
                return
            log.warning("%s: step over %d sequences failed (%r); splitting the batch",
                        self.name, len(tagged), exc)
            mid = len(tagged) // 2
            for part in (tagged[:mid], tagged[mid:]):
                self._part([s for s, is_new in part if not is_new],
                           [s for s, is_new in part if is_new], results, errors)
            return
        results.update(by_id)


def request_error(exc: BaseException) -> RequestFailed:
    if isinstance(exc, EngineError):
        code = exc.code
    elif isinstance(exc, MemoryError) or "out of memory" in str(exc).lower():
        code = "out_of_memory"
    else:
        code = "engine_error"
    return RequestFailed(f"the engine failed on this request (isolated from its batch): "
                         f"{type(exc).__name__}: {exc}", code=code)
