"""manage.py deploy --model M --version V --steps 10,50,100     (runs the rollout to its end)
manage.py deploy --model M --pause | --resume | --promote | --rollback   (the active rollout)

The rollout loop and its thresholds: inference_client/control/rollout.py and the
config document's "rollout" section (ROLLOUT_* in document 0). Exit status 1
when it ends rolled back or failed.
"""

from __future__ import annotations

import getpass
import socket

from django.core.management.base import BaseCommand, CommandError

from inference_client.control import rollout as ro
from inference_client.models import Rollout
from inference_protocol.config import ConfigError


class Command(BaseCommand):
    help = "Roll a model version out in canary steps, with automatic rollback."

    def create_parser(self, prog_name, subcommand, **kwargs):
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True)
        parser.add_argument("--version", dest="model_version")
        parser.add_argument("--steps", default="10,50,100")
        for action in ("pause", "resume", "promote", "rollback"):
            parser.add_argument(f"--{action}", action="store_const", const=action, dest="action")
        parser.add_argument("--created-by", default=f"{getpass.getuser()}@{socket.gethostname()}")

    def handle(self, *args, model, model_version, steps, action, created_by, **options):
        try:
            if action:
                active = Rollout.objects.filter(model=model, state__in=Rollout.ACTIVE).first()
                if active is None:
                    raise CommandError(f"no rollout of {model} is in progress")
                ro.rollout_request(rollout_id=active.pk, action=action, actor=created_by)
                self.stdout.write(f"{action} requested for rollout {active.pk}")
                return
            if not model_version:
                raise CommandError("give --version (or --pause/--resume/--promote/--rollback)")
            try:
                percents = [int(s) for s in steps.split(",")]
            except ValueError:
                raise CommandError(f"--steps {steps!r}: give comma-separated percentages, "
                                   "e.g. 10,50,100") from None
            rollout = ro.rollout_start(model=model, version=model_version, steps=percents, actor=created_by)
            self.stdout.write(f"rollout {rollout.pk}: {model}@{model_version} over {rollout.stable_version}")
            rollout = ro.rollout_run(rollout, progress=lambda message: self.stdout.write(f"  {message}"))
        except ro.RolloutError as exc:
            raise CommandError(f"{exc} [{exc.code}]") from None
        except ConfigError as exc:
            raise CommandError("document refused:\n  " + "\n  ".join(exc.problems)) from None
        self.stdout.write(f"rollout {rollout.pk} {rollout.state}: {rollout.reason}")
        if rollout.state != Rollout.State.PROMOTED:
            raise CommandError(f"rollout {rollout.state}")
