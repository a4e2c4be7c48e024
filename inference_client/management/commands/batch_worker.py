"""Drive Batch API jobs that no process holds (core.jobs): ones created with
BATCH_DISPATCH=none (the default with services: servers never drive batches),
ones cancelled while no driver held them, and running ones whose driver's lease
ran out (a crashed driver): they resume, skipping the lines already stored.

    manage.py batch_worker              # poll for ever, driving up to --drivers jobs at once
    manage.py batch_worker --once       # drive what is waiting now, one after the other, then exit
"""

from core.commands import JobWorkerCommand
from inference_client.batch_job import BATCH_JOB


class Command(JobWorkerCommand):
    help = "Drive Batch API jobs that no process holds (new, or with an expired lease)."
    kinds = [BATCH_JOB]
    nice_setting = "BATCH_WORKER_NICE"
