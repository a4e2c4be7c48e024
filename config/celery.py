"""The Celery app; GPU workers run `celery -A config worker -Q gpu.<model>`, webhook
workers `-Q webhooks`, and one `celery -A config beat` sends the periodic tasks.

A GPU worker sizes itself: its models load before its pool is made, and the
pool (threads, settings CELERY_WORKER_POOL) gets one thread per request of the
window its engines need (inference_worker/sizing.py: max batch size x depth);
a webhooks worker runs WEBHOOK_WORKER_THREADS. -c and --prefetch-multiplier
stay overrides."""

import contextlib
import os
import sys
from pathlib import Path

from celery import Celery, bootsteps, signals
from celery.beat import PersistentScheduler
from django.conf import settings

from core.liveness import mark
from core.startup import StartupError, check_worker, settings_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
settings_or_exit()

app = Celery("promptyard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class AckWake(bootsteps.StartStopStep):
    """Wake the consumer's event loop as soon as another thread queues work for it.

    With the threads pool, a late ack is queued from the task's thread with
    hub.call_soon, which does not wake the loop: it goes out at the loop's next
    wake-up, a new message or its 1 s idle poll. Once the prefetch window is full
    of finished-but-unacked tasks, no message comes, so acks (and with them the
    next messages) arrived in bursts a second apart (issue 14's "in-worker tasks
    254 -> 0 -> 155 -> 0 at 1 s intervals"). The loop watches a pipe of this
    step, and call_soon writes a byte to it: one per wake-up, however many
    callbacks are queued. (A repeating 5 ms timer did this before: 200 wake-ups
    a second, an idle worker at 29 ms of CPU per second against 16 without it.)"""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    hub = None

    def start(self, c):
        if c.hub is None or not settings.CELERY_ACK_WAKE or self.hub is not None:
            return
        self.hub = hub = c.hub
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._written = False  # a byte is in the pipe, or about to be
        call_soon = hub.call_soon

        def call_soon_and_wake(callback, *args):
            queued = call_soon(callback, *args)
            # After the callback is queued: the loop, once it drains the pipe,
            # runs every callback queued before the drain ended.
            if not self._written:
                self._written = True
                with contextlib.suppress(BlockingIOError):  # full: the loop wakes anyway
                    os.write(self._write, b"w")
            return queued

        hub.call_soon = call_soon_and_wake
        hub.add_reader(self._read, self._drain)

    def _drain(self):
        with contextlib.suppress(BlockingIOError):
            os.read(self._read, 4096)
        # Only now: a call_soon racing with the read saw _written and did not write,
        # but its callback was queued before this, and the loop runs it next.
        self._written = False

    def stop(self, c):
        hub, self.hub = self.hub, None
        if hub is None:
            return
        del hub.call_soon  # Hub's own again
        hub.remove_reader(self._read)
        os.close(self._read)
        os.close(self._write)


app.steps["consumer"].add(AckWake)


@signals.celeryd_init.connect
@signals.beat_init.connect
def _refuse_to_start(**kwargs):
    """A worker or beat without its services: one line and exit status 2 (Celery
    would retry an unreachable broker for ever)."""
    try:
        check_worker()
    except StartupError as exc:
        sys.stderr.write(f"promptyard: {exc}\n")
        raise SystemExit(2) from None


@signals.celeryd_init.connect
def size_worker(sender=None, conf=None, options=None, **kwargs):
    """A worker of gpu.<model> queues only: load the models now, before the pool
    is made, and size the pool to their window; a worker of the webhooks queue:
    WEBHOOK_WORKER_THREADS. Either unless -c (or CELERY_WORKER_CONCURRENCY) gave a size."""
    from inference_protocol.queues import model_of_queue
    from inference_worker.tasks import prepare_models

    options = options or {}
    queues = list(options.get("queues") or ())
    if queues and all(model_of_queue(name) for name in queues):
        size = prepare_models(queues)
    elif queues == [settings.WEBHOOK_QUEUE]:
        size = settings.WEBHOOK_WORKER_THREADS
    else:
        return
    if options.get("concurrency") is None:
        conf.worker_concurrency = size


class BeatScheduler(PersistentScheduler):
    """Celery's own, keeping its state file in VAR_DIR, which a fresh checkout lacks."""

    def setup_schedule(self):
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()

    def tick(self, *args, **kwargs):
        """One pass over the schedule; marks beat alive (manage.py doctor) until
        well past the sleep that follows it."""
        interval = super().tick(*args, **kwargs)
        mark("beat", 3 * interval + 5)
        return interval
