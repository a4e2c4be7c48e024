"""Drive evaluation runs that no process holds: queued ones (EVAL_DISPATCH=none,
the default with services: servers never drive runs) and running ones whose
driver's lease ran out (a crashed driver); and queued background imports.

    manage.py eval_worker              # poll for ever, driving up to --drivers jobs at once
    manage.py eval_worker --once       # drive what is waiting now, one after the other, then exit
"""

import time

from django.core.management.base import BaseCommand

from core.leases import DriverThreads, release_connection
from playground.evals.datasets import dataset_import_run
from playground.evals.models import DatasetImport
from playground.evals.runs import evalrun_drive, stale_runs


class Command(BaseCommand):
    help = "Drive evaluation runs that no process holds (queued, or with an expired lease)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true",
                            help="Drive what is waiting now, one job after the other, then exit.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls (default 2).")
        parser.add_argument("--drivers", type=int, default=8,
                            help="Jobs driven at once, each on a thread (default 8).")

    def handle(self, *args, once=False, poll=2.0, drivers=8, **options):
        if once:
            for kind, drive, job_id in _waiting(imports=5, runs=20):
                self.stdout.write(f"{kind} {job_id}: {drive(job_id)}")
            return
        threads = DriverThreads(drivers)
        while True:
            room = threads.room()
            for kind, drive, job_id in _waiting(imports=room, runs=room):
                if threads.start(drive, job_id, name=f"{kind}-{job_id}"):
                    self.stdout.write(f"{kind} {job_id}: started")
            release_connection()  # none held between polls
            time.sleep(poll)


def _waiting(*, imports: int, runs: int):
    """(kind, driver, id) of the queued imports, then of the runs no driver holds."""
    queued = DatasetImport.objects.filter(status="queued").order_by("created_at").values_list("pk", flat=True)
    for import_id in list(queued[:imports]):
        yield "import", dataset_import_run, import_id
    for run_id in list(stale_runs().values_list("pk", flat=True)[:runs]):
        yield "run", evalrun_drive, run_id
