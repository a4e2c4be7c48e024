"""Drive Batch API jobs that no process holds: ones created with
BATCH_DISPATCH=none (the default with services: servers never drive batches),
ones cancelled while no driver held them, and running ones whose driver's lease
ran out (a crashed driver): they resume, skipping the lines already stored.

    manage.py batch_worker              # poll for ever, driving up to --drivers jobs at once
    manage.py batch_worker --once       # drive what is waiting now, one after the other, then exit
"""

import time

from django.core.management.base import BaseCommand

from core.leases import DriverThreads, release_connection
from inference_client.batches import batch_drive, stale_batches


class Command(BaseCommand):
    help = "Drive Batch API jobs that no process holds (new, or with an expired lease)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true",
                            help="Drive what is waiting now, one batch after the other, then exit.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls (default 2).")
        parser.add_argument("--drivers", type=int, default=8,
                            help="Batches driven at once, each on a thread (default 8).")

    def handle(self, *args, once=False, poll=2.0, drivers=8, **options):
        if once:
            for batch_id in list(stale_batches().values_list("pk", flat=True)[:20]):
                self.stdout.write(f"batch {batch_id}: {batch_drive(batch_id)}")
            return
        threads = DriverThreads(drivers)
        while True:
            for batch_id in list(stale_batches().values_list("pk", flat=True)[:threads.room()]):
                if threads.start(batch_drive, batch_id, name=f"batch-{batch_id}"):
                    self.stdout.write(f"batch {batch_id}: started")
            release_connection()  # none held between polls
            time.sleep(poll)
