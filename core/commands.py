"""What the management commands that name a model version share."""

import getpass
import socket
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


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
