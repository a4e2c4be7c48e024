"""Drive Batch API jobs that no process holds: ones created with
BATCH_DISPATCH=none (the default with services: servers never drive batches),
ones cancelled while no driver held them, and running ones whose driver's lease
ran out (a crashed driver): they resume, skipping the lines already stored.

    manage.py batch_worker            # poll for ever
    manage.py batch_worker --once     # drive what is waiting now, then exit
"""

import time

from django.core.management.base import BaseCommand

from core.leases import release_connection
from inference_client.batches import batch_drive, stale_batches


class Command(BaseCommand):
    help = "Drive Batch API jobs that no process holds (new, or with an expired lease)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Drive what is waiting now, then exit.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls (default 2).")

    def handle(self, *args, once=False, poll=2.0, **options):
        while True:
            for batch_id in list(stale_batches().values_list("pk", flat=True)[:20]):
                self.stdout.write(f"batch {batch_id}: {batch_drive(batch_id)}")
            if once:
                return
            release_connection()  # none held between polls
            time.sleep(poll)
