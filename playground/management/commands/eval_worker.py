"""Drive evaluation runs that no process holds: queued ones (EVAL_DISPATCH=none)
and running ones whose driver's lease ran out (a crashed server or driver).

    manage.py eval_worker            # poll for ever
    manage.py eval_worker --once     # drive what is waiting now, then exit
"""

import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from playground.evals.runs import evalrun_drive, stale_runs


class Command(BaseCommand):
    help = "Drive evaluation runs that no process holds (queued, or with an expired lease)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Drive what is waiting now, then exit.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls (default 2).")

    def handle(self, *args, once=False, poll=2.0, **options):
        while True:
            for run_id in list(stale_runs().values_list("pk", flat=True)[:20]):
                status = evalrun_drive(run_id)
                self.stdout.write(f"run {run_id}: {status}")
            if once:
                return
            time.sleep(poll)
            close_old_connections()
