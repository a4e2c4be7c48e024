"""A prompt in production: its logged generations, a version's figures beside the
previous one's, its online scores, regression alerts (move the label back, or
dismiss), and a generation turned into a test case.

    py.production.generations(prompt_id, label="production", status="error")

On `AsyncPromptyard` the same methods are awaited, and the lists are async
iterators (`async for g in py.production.generations(...)`). Lists page through
the API's cursor pages lazily.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from urllib.parse import quote


def _q(part: object) -> str:
    return quote(str(part), safe="")


def _given(**params: object) -> dict:
    """The parameters set, datetimes as ISO 8601 (a naive one is taken as UTC by the server)."""
    return {name: value.isoformat() if isinstance(value, datetime.datetime) else value
            for name, value in params.items() if value is not None}


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: dict = field(default_factory=dict)
    body: dict | None = None


class Production:
    """The production calls of one client (`client.production`)."""

    def __init__(self, client):
        self._client = client

    def generations(self, prompt, *, version=None, label: str | None = None, status: str | None = None,
                    model: str | None = None, since: datetime.datetime | None = None,
                    until: datetime.datetime | None = None, search: str | None = None, page_size: int = 50):
        """The prompt's generations, newest first (status "ok", "error" or "cancelled")."""
        return self._client._pages(Call("GET", f"/api/prompts/{_q(prompt)}/generations", _given(
            version=version, label=label, status=status, model=model, since=since, until=until, q=search,
            page_size=page_size)))

    def generation(self, generation_id):
        """One generation: its variables, messages, parameters, output, usage and timing."""
        return self._client._call(Call("GET", f"/api/generations/{_q(generation_id)}"))

    def version_metrics(self, prompt, version, *, days: int = 7, label: str | None = None,
                        bucket: str | None = None):
        """The version's figures per time bucket, beside the previous version's (or the
        split's control), with its evaluation and online scores."""
        return self._client._call(Call("GET", f"/api/prompts/{_q(prompt)}/versions/{_q(version)}/"
                                       "generation-metrics", _given(days=days, label=label, bucket=bucket)))

    def online_scores(self, prompt, version, *, days: int = 7, bucket: str | None = None):
        """The version's online evaluation scores per evaluator (count, mean, 95% interval, pass rate)."""
        return self._client._call(Call("GET", f"/api/prompts/{_q(prompt)}/versions/{_q(version)}/"
                                       "online-scores", _given(days=days, bucket=bucket)))

    def alerts(self, prompt, *, status: str | None = "open"):
        """The prompt's regression alerts ("open", "rolled_back", "dismissed"; None: all), open first."""
        return self._client._pages(Call("GET", f"/api/prompts/{_q(prompt)}/alerts", _given(status=status)))

    def rollback(self, prompt, alert_id):
        """Move the alert's label back to the version it held before (the label's own rules apply)."""
        return self._client._call(Call("POST", f"/api/prompts/{_q(prompt)}/alerts/{_q(alert_id)}/rollback"))

    def dismiss(self, prompt, alert_id):
        """Close the alert; the label stays."""
        return self._client._call(Call("POST", f"/api/prompts/{_q(prompt)}/alerts/{_q(alert_id)}/dismiss"))

    def add_to_dataset(self, generation_id, dataset_id, *, expected: str | None = None):
        """A new dataset version with the generation as a row (its output, or `expected`, as the
        expected output)."""
        return self._client._call(Call("POST", f"/api/generations/{_q(generation_id)}/test-case",
                                       body=_given(dataset_id=str(dataset_id), expected=expected)))
