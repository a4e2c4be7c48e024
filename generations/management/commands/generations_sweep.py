from django.core.management.base import BaseCommand

from generations.retention import generations_sweep


class Command(BaseCommand):
    help = "Delete generations older than GENERATIONS_RETENTION_DAYS (and their stored bodies)."

    def handle(self, *args, **options):
        self.stdout.write(f"{generations_sweep()} generations deleted")
