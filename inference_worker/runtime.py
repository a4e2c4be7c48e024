"""The schedulers of this process: one per model, each owning its engine.

A GPU worker process loads its model(s) at start-up; the embedded default
loads a model the first time it is asked for. Either way the same Scheduler
runs the same engine code.

A spec may name a published checkpoint, {"engine": "llamacpp", "checkpoint":
{"model": "smollm2", "version": "v1"}}: it is fetched through the swarm and
verified (inference_worker.checkpoints) before the engine loads it, so a model
with a missing or corrupt checkpoint never gets a scheduler, hence no heartbeat.
"""

from __future__ import annotations

import logging
import threading

from inference_protocol.catalog import model_spec
from inference_worker.engines import build_engine, engine_class
from inference_worker.engines.base import EngineLoadError
from inference_worker.scheduler import Scheduler, SchedulerConfig

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_loading: dict[str, threading.Lock] = {}
_schedulers: dict[str, Scheduler] = {}


def get_scheduler(model: str) -> Scheduler:
    """The running scheduler for ``model``, loading its engine on first use
    (EngineLoadError if the model cannot be loaded)."""
    with _lock:
        scheduler = _schedulers.get(model)
        if scheduler is not None:
            return scheduler
        loading = _loading.setdefault(model, threading.Lock())
    # A checkpoint fetch may take minutes: hold only this model's lock meanwhile,
    # so heartbeats and other models go on.
    with loading:
        with _lock:
            scheduler = _schedulers.get(model)
        if scheduler is None:
            spec = dict(model_spec(model))
            config = SchedulerConfig(**spec.pop("scheduler", {}))
            if "checkpoint" in spec:
                spec = _with_checkpoint(model, spec)
            engine = build_engine(model, spec)
            scheduler = Scheduler(engine, config, name=model).start()
            with _lock:
                _schedulers[model] = scheduler
            logger.info("model %s loaded (%s)", model, type(engine).__name__)
        return scheduler


def _with_checkpoint(model: str, spec: dict) -> dict:
    """The spec with the checkpoint fetched, verified, and named as the engine's files."""
    from inference_worker import checkpoints  # libtorrent: only for specs that name one

    ref = spec.pop("checkpoint")
    if not isinstance(ref, dict) or set(ref) != {"model", "version"}:
        raise EngineLoadError(f"model {model!r}: checkpoint must be {{'model': ..., 'version': ...}}")
    try:
        directory = checkpoints.ensure(model=ref["model"], version=ref["version"])
    except checkpoints.FetchError as exc:
        raise EngineLoadError(f"model {model!r}: {exc}") from exc
    files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    options = engine_class(spec.get("engine", "")).checkpoint_options(str(directory), files)
    clash = sorted(set(options) & set(spec))
    if clash:
        raise EngineLoadError(f"model {model!r}: the checkpoint sets {', '.join(clash)}; "
                              "drop it from the spec")
    return {**spec, **options}


def loaded_schedulers() -> dict[str, Scheduler]:
    with _lock:
        return dict(_schedulers)


def stop_all() -> None:
    with _lock:
        schedulers = list(_schedulers.values())
        _schedulers.clear()
    for scheduler in schedulers:
        scheduler.stop()
