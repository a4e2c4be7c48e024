"""manage.py doctor: the health of every dependency and process, one line each."""

from django.core.management.base import BaseCommand

from config.doctor import FAIL, run


class Command(BaseCommand):
    help = ("Check every dependency (database and migrations, Redis, broker, object store, config keys and "
            "document, model weights) and process (workers per queue, beat, job drivers): one line each, "
            "ok / warn / fail with what to do. Exit status 1 on any fail.")

    def add_arguments(self, parser):
        parser.add_argument("--before-start", action="store_true",
                            help="only what a stack needs before it starts: settings and services "
                                 "(makes the bucket if missing); scripts/run.sh --production runs this")

    def handle(self, *args, before_start=False, **options):
        failed = False
        for line in run(before_start=before_start):
            style = {FAIL: self.style.ERROR, "warn": self.style.WARNING}.get(line.status, self.style.SUCCESS)
            self.stdout.write(style(str(line)))
            failed |= line.status == FAIL
        if failed:
            raise SystemExit(1)
