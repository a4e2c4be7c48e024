"""Drive evaluation runs that no process holds: queued ones (EVAL_DISPATCH=none,
the default with services: servers never drive runs) and running ones whose
driver's lease ran out (a crashed driver); and queued background imports.

    manage.py eval_worker            # poll for ever
    manage.py eval_worker --once     # drive what is waiting now, then exit
"""

import time

from django.core.management.base import BaseCommand

from core.leases import release_connection
from playground.evals.datasets import dataset_import_run
from playground.evals.models import DatasetImport
from playground.evals.runs import evalrun_drive, stale_runs


class Command(BaseCommand):
    help = "Drive evaluation runs that no process holds (queued, or with an expired lease)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Drive what is waiting now, then exit.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls (default 2).")

    def handle(self, *args, once=False, poll=2.0, **options):
        while True:
            queued = DatasetImport.objects.filter(status="queued").values_list("pk", flat=True)
            for import_id in list(queued[:5]):
                self.stdout.write(f"import {import_id}: {dataset_import_run(import_id)}")
            for run_id in list(stale_runs().values_list("pk", flat=True)[:20]):
                status = evalrun_drive(run_id)
                self.stdout.write(f"run {run_id}: {status}")
            if once:
                return
            release_connection()  # none held between polls
            time.sleep(poll)
