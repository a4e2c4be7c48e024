"""The schedulers of this process: one per model, each owning its engine.

A GPU worker process loads its model(s) at start-up; the embedded default
loads a model the first time it is asked for. Either way the same Scheduler
runs the same engine code.

A spec may name a published checkpoint, {"engine": "llamacpp", "checkpoint":
{"model": "smollm2", "version": "v1"}}: it is fetched through the swarm and
verified (inference_worker.checkpoints) before the engine loads it, so a model
with a missing or corrupt checkpoint never gets a scheduler, hence no heartbeat.

A new config document is applied to what is loaded, without a restart
(``_reconcile``, a listener of inference_protocol.config):

- changed scheduler settings go to the running scheduler at once
  (``Scheduler.reconfigure``: atomically between two steps);
- a changed engine spec (any option but "scheduler", for model@version: the
  version's overrides too) is a hand-over, not a drain: a new engine is built
  on a thread of its own while the old one keeps serving, then new requests go
  to the new scheduler in one assignment, and the old scheduler finishes what
  it holds (running and waiting) and is closed. No request waits for a load
  (a transformers model takes many seconds to load; a drain-first rebuild would
  stall every arrival for the drain and the load), and no running sequence
  moves between engines (its KV cache lives in the one it started on). The
  cost: both engines are in memory until the old one drains. A spec that does
  not build leaves the running engine serving, with the reason logged and
  reported in the heartbeat (``engine_error``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

from inference_protocol import config
from inference_protocol.catalog import UnknownModel, model_spec
from inference_worker.engines import build_engine, engine_class
from inference_worker.engines.base import EngineLoadError
from inference_worker.requests import RequestFailed, RequestHandle, SchedulerConfig
from inference_worker.scheduler import Scheduler

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class _Served:
    scheduler: Scheduler
    engine_spec: dict           # what its engine was built from (the spec less "scheduler")
    engine_document: int        # the config document that spec came from
    engine_error: str | None = None  # the newest spec's build failure, while the old engine serves
    failed_spec: dict | None = None  # that spec (not built again for every later document)


_lock = threading.Lock()
_loading: dict[str, threading.Lock] = {}
_served: dict[str, _Served] = {}
_rebuild_again: dict[str, bool] = {}  # model -> asked again while its rebuild runs
_listening = False


def get_scheduler(model: str) -> Scheduler:
    """The running scheduler for ``model``, loading its engine on first use
    (EngineLoadError if the model cannot be loaded)."""
    with _lock:
        served = _served.get(model)
        if served is not None:
            return served.scheduler
        loading = _loading.setdefault(model, threading.Lock())
    # A checkpoint fetch may take minutes: hold only this model's lock meanwhile,
    # so heartbeats and other models go on.
    with loading:
        with _lock:
            served = _served.get(model)
        if served is None:
            snapshot = config.current()
            engine_spec, scheduler_config = _split(model, model_spec(model, snapshot))
            engine = _build(model, engine_spec)
            scheduler = Scheduler(engine, scheduler_config, name=model).start()
            served = _Served(scheduler, engine_spec, snapshot.number)
            with _lock:
                _served[model] = served
            logger.info("model %s loaded (%s)", model, type(engine).__name__)
            _listen()
            _reconcile(model)  # a document that arrived while it loaded
        return served.scheduler


def submit(model: str, seq, priority, **kwargs) -> RequestHandle:
    """``get_scheduler(model).submit(...)``; a scheduler handed over between the
    look-up and the submit refuses (scheduler_stopped) and the request goes to
    its successor instead."""
    return submit_together(model, [(seq, kwargs.pop("on_token", None))], priority, **kwargs)[0]


def submit_together(model: str, items, priority, **kwargs) -> list[RequestHandle]:
    """``submit`` for several sequences at once (Scheduler.submit_together)."""
    scheduler = get_scheduler(model)
    while True:
        try:
            return scheduler.submit_together(items, priority, **kwargs)
        except RequestFailed as exc:
            successor = loaded_schedulers().get(model)
            if exc.code != "scheduler_stopped" or successor is None or successor is scheduler:
                raise
            scheduler = successor


def _split(model: str, spec: dict) -> tuple[dict, SchedulerConfig]:
    spec = dict(spec)
    settings = spec.pop("scheduler", {})
    try:
        return spec, SchedulerConfig(**settings)
    except TypeError as exc:
        raise EngineLoadError(f"model {model!r}: scheduler settings: {exc}") from None


def _build(model: str, engine_spec: dict):
    spec = _with_checkpoint(model, dict(engine_spec)) if "checkpoint" in engine_spec else engine_spec
    return build_engine(model, spec)


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


# ---- new config documents ---------------------------------------------------------

def _listen() -> None:
    global _listening
    with _lock:
        if _listening:
            return
        _listening = True
    config.state().listeners.append(_on_document)


def _on_document(old: config.ConfigSnapshot, new: config.ConfigSnapshot) -> None:
    with _lock:
        names = list(_served)
    for name in names:
        _reconcile(name, new)


def _wanted(name: str, snapshot: config.ConfigSnapshot):
    """(what serves ``name`` now, the document's engine spec and scheduler config),
    or None when nothing serves it; raises when the document cannot serve it."""
    with _lock:
        served = _served.get(name)
    if served is None:
        return None
    return (served, *_split(name, model_spec(name, snapshot)))


def _reconcile(name: str, snapshot: config.ConfigSnapshot | None = None) -> None:
    """Bring ``name``'s scheduler and engine to the document (module docstring)."""
    snapshot = snapshot or config.current()
    try:
        wanted = _wanted(name, snapshot)
    except (UnknownModel, EngineLoadError) as exc:
        # The gateway routes nothing here under that document; what runs goes on.
        logger.warning("config document %s: %s; %s keeps its settings", snapshot.number, exc, name)
        return
    if wanted is None:
        return
    served, engine_spec, scheduler_config = wanted
    if scheduler_config != served.scheduler.config:
        try:
            served.scheduler.reconfigure(scheduler_config)
            logger.info("config document %s: %s's scheduler settings applied", snapshot.number, name)
        except ValueError as exc:
            logger.error("config document %s: %s's scheduler settings refused: %s",
                         snapshot.number, name, exc)
    if engine_spec == served.engine_spec:
        served.engine_error = served.failed_spec = None  # back to the spec it runs
    elif engine_spec != served.failed_spec:
        _rebuild_soon(name)


def _rebuild_soon(name: str) -> None:
    """One rebuild thread per model at a time; a document arriving meanwhile is
    looked at again when it ends (so the newest spec wins, built once)."""
    with _lock:
        if name in _rebuild_again:
            _rebuild_again[name] = True
            return
        _rebuild_again[name] = False
    threading.Thread(target=_rebuild_loop, args=(name,), name=f"rebuild-{name}", daemon=True).start()


def _rebuild_loop(name: str) -> None:
    while True:
        try:
            _rebuild(name)
        except Exception:
            logger.exception("rebuilding %s's engine failed", name)
        with _lock:
            if not _rebuild_again.get(name):
                _rebuild_again.pop(name, None)
                return
            _rebuild_again[name] = False


def _rebuild(name: str) -> None:
    snapshot = config.current()
    try:
        wanted = _wanted(name, snapshot)
    except (UnknownModel, EngineLoadError):
        return  # _reconcile logged it
    if wanted is None or wanted[1] == wanted[0].engine_spec:
        return
    served, engine_spec, scheduler_config = wanted
    started = time.monotonic()
    try:
        engine = _build(name, engine_spec)
        successor = Scheduler(engine, scheduler_config, name=name, deliver=served.scheduler.deliver)
    except (EngineLoadError, ValueError) as exc:
        served.engine_error, served.failed_spec = f"config document {snapshot.number}: {exc}", engine_spec
        logger.error("config document %s: cannot rebuild %s's engine (%s); the running engine "
                     "(document %s) keeps serving", snapshot.number, name, exc, served.engine_document)
        return
    successor.start()
    old = served.scheduler
    with _lock:
        if _served.get(name) is not served:  # stopped meanwhile (worker shutdown)
            swapped = False
        else:
            _served[name] = _Served(successor, engine_spec, snapshot.number)
            swapped = True
    if not swapped:
        successor.stop()
        return
    logger.info("config document %s: %s's engine rebuilt in %.2fs (%s); handing over from document %s",
                snapshot.number, name, time.monotonic() - started, type(engine).__name__,
                served.engine_document)
    threading.Thread(target=_retire, args=(name, old), name=f"retire-{name}", daemon=True).start()
    _reconcile(name)  # scheduler settings published while it built


def _retire(name: str, scheduler: Scheduler) -> None:
    """The old scheduler finishes everything it holds (each request's own
    deadline bounds this), then its engine is closed."""
    started = time.monotonic()
    held = scheduler.stats()
    scheduler.stop(drain=True)
    close = getattr(scheduler.engine, "close", None)
    if close is not None:
        try:
            close()
        except Exception:
            logger.exception("%s: closing the old engine failed", name)
    logger.info("%s: the old engine finished its %d running and %d waiting requests in %.2fs and was closed",
                name, held.running, held.queue_length, time.monotonic() - started)


def engine_status(name: str) -> tuple[int, str | None] | None:
    """(the config document its engine was built from, the newest spec's build
    failure or None) for the heartbeat; None when ``name`` is not loaded."""
    with _lock:
        served = _served.get(name)
    return None if served is None else (served.engine_document, served.engine_error)


def loaded_schedulers() -> dict[str, Scheduler]:
    with _lock:
        return {name: served.scheduler for name, served in _served.items()}


def stop_all() -> None:
    with _lock:
        schedulers = [served.scheduler for served in _served.values()]
        _served.clear()
    for scheduler in schedulers:
        scheduler.stop()
