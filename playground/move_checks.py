"""What a label move must pass besides its protection: checks that apps above
playground register when Django starts (evals registers a label's evaluation
gate, evals.gate.gate_check). Each raises a DomainError to refuse the move."""

from collections.abc import Callable

LABEL_MOVE_CHECKS: list[Callable[..., object]] = []


def register(check: Callable[..., object]) -> None:
    if check not in LABEL_MOVE_CHECKS:
        LABEL_MOVE_CHECKS.append(check)


def label_move_check(*, prompt, name: str, user, candidate_id, baseline_id, run_id) -> None:
    """Run every registered check on a move of `name` from `baseline_id` to
    `candidate_id` (with the evaluation run the request named, or None)."""
    for check in LABEL_MOVE_CHECKS:
        check(prompt=prompt, name=name, user=user, candidate_id=candidate_id, baseline_id=baseline_id,
              run_id=run_id)
