"""Evaluations: datasets (immutable versions of rows), runs of prompt versions
over them at batch priority, evaluators that score each output, and the gate
that lets a label move only behind a passing run (docs/evaluations.md)."""
