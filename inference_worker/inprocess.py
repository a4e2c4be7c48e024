"""The embedded default's worker: `run_generation` on threads of the serving
process (no broker), events through the in-memory log."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from inference_protocol.backend import Backend
from inference_worker.generation import run_generation
from inference_worker.heartbeat import local_records
from inference_worker.runtime import get_scheduler


class InProcessBackend(Backend):
    def __init__(self, log=None, max_in_flight: int = 256):
        super().__init__(log)
        # Threads only wait on the scheduler; the scheduler thread does the work.
        self._pool = ThreadPoolExecutor(max_workers=max_in_flight, thread_name_prefix="inference")

    def submit(self, request):
        self._pool.submit(run_generation, request, self.log)

    def live_workers(self, model=None):
        """The in-process schedulers are the workers: asking for one model
        loads it, as its first request would."""
        if model is not None:
            try:
                get_scheduler(model)
            except Exception:  # a model that cannot load has no live worker
                return []
        return local_records(model)
