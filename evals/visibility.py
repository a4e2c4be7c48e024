"""What a run's reader may see of the prompt versions it ran.

A run is visible to whoever may view its dataset (permissions.access_run), but
its columns and judges are prompt versions the reader may not be able to view: a
dataset grant is not a prompt grant, and a prompt grant may have been revoked
since. Of those versions the reader gets what a 404 would give: no prompt or
version id, title or number, and nothing derived from the prompt's text (the
outputs, error messages, word diffs, the judge's reasons). Scores, pass/fail,
latencies and token counts stay: they are the run's results over the dataset.
"""

from __future__ import annotations

import dataclasses

from playground.permissions import prompts_visible_to


@dataclasses.dataclass(frozen=True)
class Visibility:
    prompts: frozenset[str]  # ids (str) of the prompts the reader may view

    def prompt(self, prompt_id) -> bool:
        return str(prompt_id) in self.prompts

    def column(self, column) -> bool:
        return self.prompt(column.prompt_version.prompt_id)


def _judge_prompts(run) -> set[str]:
    return {str(spec["args"]["prompt"]) for spec in run.evaluators if spec.get("name") == "judge"}


def visibility_for(*, user, runs) -> Visibility:
    """The prompts of ``runs`` (columns and judges) that ``user`` may view as an
    account: owned, or granted now. One query for all the runs."""
    ids = set()
    for run in runs:
        ids |= {str(c.prompt_version.prompt_id) for c in run.columns.all()} | _judge_prompts(run)
    visible = prompts_visible_to(user=user).filter(pk__in=ids).values_list("pk", flat=True) if ids else []
    return Visibility(frozenset(str(pk) for pk in visible))


def hidden_judges(run, visibility: Visibility) -> set[str]:
    """Score keys of the run's judges whose prompt the reader may not view."""
    return {spec["key"] for spec in run.evaluators
            if spec.get("name") == "judge" and not visibility.prompt(spec["args"]["prompt"])}


def redact_evaluators(evaluators: list[dict], visibility: Visibility) -> list[dict]:
    """The run's evaluator specs, a hidden judge's prompt and version ids as null."""
    out = []
    for spec in evaluators:
        if spec.get("name") == "judge" and not visibility.prompt(spec["args"]["prompt"]):
            spec = {**spec, "args": {**spec["args"], "prompt": None, "version": None}}
        out.append(spec)
    return out


def redact_cell(cell: dict, *, column_visible: bool, judges: set[str]) -> dict:
    """A result cell as the reader may see it (api._cell's shape)."""
    if not column_visible:
        cell = {**cell, "output": None, "tool_calls": None, "error_message": None, "redacted": True}
        cell.pop("diff", None)
    if judges:
        cell["scores"] = {key: ({**score, "reason": ""} if key in judges else score)
                          for key, score in cell["scores"].items()}
    return cell
