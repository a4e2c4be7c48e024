"""Drive Batch API jobs that no process holds (core.jobs): ones created with
BATCH_DISPATCH=none (the default with services: servers never drive batches),
ones cancelled while no driver held them, and running ones whose driver's lease
ran out (a crashed driver): they resume, skipping the lines already stored.

    manage.py batch_worker              # poll for ever, driving up to --drivers jobs at once
    manage.py batch_worker --once       # drive what is waiting now, one after the other, then exit
"""

from django.core.management.base import BaseCommand

from core.jobs import run_worker
from inference_client.batch_job import BATCH_JOB


class Command(BaseCommand):
    help = "Drive Batch API jobs that no process holds (new, or with an expired lease)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true",
                            help="Drive what is waiting now, one batch after the other, then exit.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls (default 2).")
        parser.add_argument("--drivers", type=int, default=8,
                            help="Batches driven at once, each on a thread (default 8).")

    def handle(self, *args, once=False, poll=2.0, drivers=8, **options):
        run_worker([BATCH_JOB], once=once, poll=poll, drivers=drivers, say=self.stdout.write)
