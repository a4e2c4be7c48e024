"""manage.py deploy --model M --version V --steps 10,50,100     (runs the rollout to its end)
manage.py deploy --model M --pause | --resume | --promote | --rollback   (the active rollout)

Its driver (this process) holds the rollout's lease while it runs. On SIGTERM
it lets the lease go after the step it is in (core.jobs), so the rollout is
stale at once; if it dies, once the lease lapses (ROLLOUT_LEASE_S): --resume then
takes it over and drives it here from its recorded step (a paused one resumes
too), and --rollback aborts it here (rolls back what it published).

The rollout loop and its thresholds: inference_client/control/rollout.py and the
config document's "rollout" section (ROLLOUT_* in document 0). Exit status 1
when it ends rolled back or failed.
"""

from __future__ import annotations

from django.core.management.base import CommandError

from core import shutdown
from core.commands import ModelVersionCommand, operator
from inference_client.control import rollout as ro
from inference_client.models import Rollout
from inference_protocol.config_document import ConfigError


class Command(ModelVersionCommand):
    help = "Roll a model version out in canary steps, with automatic rollback."

    version_required = False

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--steps", default="10,50,100")
        for action in ("pause", "resume", "promote", "rollback"):
            parser.add_argument(f"--{action}", action="store_const", const=action, dest="action")
        parser.add_argument("--created-by", default=operator())

    def handle(self, *args, model, model_version, steps, action, created_by, **options):
        shutdown.stop_on_sigterm()
        try:
            rollout = (self._act(model, action, created_by) if action
                       else self._start(model, model_version, steps, created_by))
        except ro.RolloutError as exc:
            raise CommandError(f"{exc} [{exc.code}]") from None
        except ConfigError as exc:
            raise CommandError("document refused:\n  " + "\n  ".join(exc.problems)) from None
        if rollout is None:
            return
        self.stdout.write(f"rollout {rollout.pk} {rollout.state}: {rollout.reason}")
        if shutdown.stopping.is_set() and rollout.stale:
            raise CommandError(f"stopped (SIGTERM); its lease is let go: deploy --model {model} --resume "
                               "drives it on from its recorded step")
        if rollout.state != Rollout.State.PROMOTED:
            raise CommandError(f"rollout {rollout.state}")

    def _progress(self, message: str) -> None:
        self.stdout.write(f"  {message}")

    def _start(self, model: str, version: str | None, steps: str, actor: str) -> Rollout:
        if not version:
            raise CommandError("give --version (or --pause/--resume/--promote/--rollback)")
        try:
            percents = [int(s) for s in steps.split(",")]
        except ValueError:
            raise CommandError(f"--steps {steps!r}: give comma-separated percentages, "
                               "e.g. 10,50,100") from None
        rollout = ro.rollout_start(model=model, version=version, steps=percents, actor=actor)
        self.stdout.write(f"rollout {rollout.pk}: {model}@{version} over {rollout.stable_version}")
        return ro.rollout_run(rollout, progress=self._progress)

    def _act(self, model: str, action: str, actor: str) -> Rollout | None:
        """An operator's action on the active rollout; the rollout when this
        process drove it to its end (a stale one resumed here)."""
        active = Rollout.objects.filter(model=model, state__in=Rollout.ACTIVE).first()
        if active is None:
            raise CommandError(f"no rollout of {model} is in progress")
        if action == "rollback" and active.stale:  # done as asked: exit status 0
            rollout = ro.rollout_abort(rollout_id=active.pk, actor=actor)
            self.stdout.write(f"rollout {rollout.pk} {rollout.state}: {rollout.reason}")
            return None
        if action == "resume" and not active.stale and active.state != Rollout.State.PAUSED:
            raise CommandError(f"rollout {active.pk} is {active.state}, driven by {active.driver} "
                               f"(lease until {active.lease_expires_at:%H:%M:%S} UTC): nothing to resume "
                               "[lease_held]")
        if action != "resume" or not active.stale:
            ro.rollout_request(rollout_id=active.pk, action=action, actor=actor)
            self.stdout.write(f"{action} requested for rollout {active.pk}")
            return None
        rollout = ro.rollout_take_over(rollout_id=active.pk, actor=actor)
        self.stdout.write(f"rollout {rollout.pk}: taken over from {active.driver or 'no driver'}")
        if rollout.state == Rollout.State.PAUSED:  # --resume: it runs on
            ro.rollout_request(rollout_id=rollout.pk, action="resume", actor=actor)
        return ro.rollout_run(rollout, progress=self._progress)
