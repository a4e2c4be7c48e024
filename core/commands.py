"""What management commands share: naming a model version, and driving background jobs."""

import getpass
import os
import socket
from typing import Any, ClassVar

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from core.jobs import JobKind, run_worker


def operator() -> str:
    """Who runs a command, as published records name them (their --created-by default)."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


class ModelVersionCommand(BaseCommand):
    """--model and --version (the model version, passed as `model_version`, in place of
    Django's own --version); a subclass adds its arguments after calling add_arguments."""

    version_required = True

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model", required=True)
        parser.add_argument("--version", required=self.version_required, dest="model_version")


class JobWorkerCommand(BaseCommand):
    """A worker command of core.jobs (batch_worker, and eval_worker can be one too): it
    drives the jobs of `kinds` that no process holds, polling for ever or --once."""

    kinds: ClassVar[list[JobKind]]
    # The setting naming the process's CPU niceness (background work yields the CPU
    # to the interactive path's processes on the same host), or None.
    nice_setting: ClassVar[str | None] = None

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true",
                            help="Drive what is waiting now, one job after the other, then exit.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls (default 2).")
        parser.add_argument("--drivers", type=int, default=8,
                            help="Jobs driven at once, each on a thread (default 8).")

    def handle(self, *args: Any, once: bool = False, poll: float = 2.0, drivers: int = 8,
               **options: Any) -> None:
        if self.nice_setting and getattr(settings, self.nice_setting) > 0:
            os.nice(getattr(settings, self.nice_setting))
        run_worker(self.kinds, once=once, poll=poll, drivers=drivers, say=self.stdout.write)
