"""manage.py stack PROCFILE: run a Procfile with honcho, giving every process the
time it takes to stop gracefully. honcho SIGKILLs what still runs KILL_WAIT
(5 s, no option sets it) after its SIGTERM; serve lets work in flight run for
SHUTDOWN_GRACE_S and its deadline hooks DEADLINE_HOOKS_S more, and the job
workers wait SHUTDOWN_GRACE_S for their drivers."""

from django.conf import settings
from django.core.management.base import BaseCommand
from honcho import command, manager

from core.shutdown import DEADLINE_HOOKS_S

KILL_MARGIN_S = 2.0  # a process's own exit after its last step


class Command(BaseCommand):
    help = ("Run a Procfile (manage.py procfile) with honcho; Ctrl-C stops every process, each "
            "given SHUTDOWN_GRACE_S to finish what is in flight before a SIGKILL.")

    def add_arguments(self, parser):
        parser.add_argument("procfile")

    def handle(self, *args, procfile, **options):
        manager.KILL_WAIT = settings.SHUTDOWN_GRACE_S + DEADLINE_HOOKS_S + KILL_MARGIN_S
        command.main(["--no-colour", "-f", procfile, "-d", ".", "start"])
