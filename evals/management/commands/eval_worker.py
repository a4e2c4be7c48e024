"""Drive evaluation runs and background dataset imports that no process
holds (core.jobs): queued ones (EVAL_DISPATCH=none, the default with services:
servers never drive them) and ones whose driver's lease ran out (a crashed
driver).

    manage.py eval_worker              # poll for ever, driving up to --drivers jobs at once
    manage.py eval_worker --once       # drive what is waiting now, one after the other, then exit
"""

from django.core.management.base import BaseCommand

from core.jobs import run_worker
from evals.import_job import IMPORT_JOB
from evals.run_job import RUN_JOB


class Command(BaseCommand):
    help = "Drive evaluation runs that no process holds (queued, or with an expired lease)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true",
                            help="Drive what is waiting now, one job after the other, then exit.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls (default 2).")
        parser.add_argument("--drivers", type=int, default=8,
                            help="Jobs driven at once, each on a thread (default 8).")

    def handle(self, *args, once=False, poll=2.0, drivers=8, **options):
        run_worker([IMPORT_JOB, RUN_JOB], once=once, poll=poll, drivers=drivers, say=self.stdout.write)
