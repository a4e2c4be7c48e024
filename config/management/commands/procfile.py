"""manage.py procfile: the Procfile of the single-host production stack, from the settings."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from config.production import processes


class Command(BaseCommand):
    help = ("Write the Procfile that `scripts/run.sh --production` runs with honcho: the server, one Celery "
            "worker per model queue, the webhooks worker, beat, and the job drivers the settings call for.")

    def add_arguments(self, parser):
        parser.add_argument("--host", default="0.0.0.0")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--out", default=None, help="where to write it (default VAR_DIR/Procfile)")

    def handle(self, *args, host, port, out, **options):
        path = Path(out) if out else settings.VAR_DIR / "Procfile"
        path.parent.mkdir(parents=True, exist_ok=True)
        found = processes(host=host, port=port)
        path.write_text("".join(f"{p.line()}\n" for p in found))
        self.stdout.write(f"{path}: {', '.join(p.name for p in found)}")
