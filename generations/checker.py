"""The embedded default's regression check (no broker, so no beat): a thread of
the serving process runs generations.regression every REGRESSION_CHECK_INTERVAL_S,
as webhooks.delivery.Sweeper sweeps deliveries."""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import close_old_connections

from .regression import regression_check

log = logging.getLogger(__name__)


class RegressionChecker:
    def __init__(self, interval: float | None = None):
        self.interval = settings.REGRESSION_CHECK_INTERVAL_S if interval is None else interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="regression-check")

    def start(self) -> RegressionChecker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                regression_check()
            except Exception:  # the database busy or away: the next tick tries again
                log.warning("regression check failed", exc_info=True)
            finally:
                close_old_connections()
