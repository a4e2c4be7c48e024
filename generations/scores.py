"""Per-generation scores of a version, for the regression alarm's `score:<name>` checks."""

from __future__ import annotations

import datetime


def version_score_samples(*, version_id, since: datetime.datetime, until: datetime.datetime
                          ) -> dict[str, list[float]]:
    """{evaluator name: the scores of the version's generations created in [since, until)}."""
    return {}  # online evaluation scores of generations feed in here
