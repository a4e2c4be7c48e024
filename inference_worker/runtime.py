"""The schedulers of this process: one per model, each owning its engine.

A GPU worker process loads its model(s) at start-up; the embedded default
loads a model the first time it is asked for. Either way the same Scheduler
runs the same engine code.
"""

from __future__ import annotations

import logging
import threading

from inference_protocol.catalog import model_spec
from inference_worker.engines import build_engine
from inference_worker.scheduler import Scheduler, SchedulerConfig

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_schedulers: dict[str, Scheduler] = {}


def get_scheduler(model: str) -> Scheduler:
    """The running scheduler for ``model``, loading its engine on first use
    (EngineLoadError if the model cannot be loaded)."""
    with _lock:
        scheduler = _schedulers.get(model)
        if scheduler is None:
            spec = dict(model_spec(model))
            config = SchedulerConfig(**spec.pop("scheduler", {}))
            engine = build_engine(model, spec)
            scheduler = _schedulers[model] = Scheduler(engine, config, name=model).start()
            logger.info("model %s loaded (%s)", model, type(engine).__name__)
        return scheduler


def loaded_schedulers() -> dict[str, Scheduler]:
    with _lock:
        return dict(_schedulers)


def stop_all() -> None:
    with _lock:
        schedulers = list(_schedulers.values())
        _schedulers.clear()
    for scheduler in schedulers:
        scheduler.stop()
