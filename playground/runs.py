"""Run history: every run of the playground page, stored as the server sent it.

The gateway's playground run (inference_client/playground_runs.py) builds the
request, then calls `run_record` once the generation has ended. A run is seen by
any account that may view its prompt (sharing.access), and by no one else: to
them it does not exist (404 `run_not_found`). Only its author deletes it.
"""

from __future__ import annotations

import dataclasses
import json

from django.conf import settings
from django.db.models import Q, QuerySet

from core.error_codes import DomainError
from core.ids import is_uuid
from core.storable import storable

from . import selectors
from .bodies import body_text
from .calls.builder import render_messages
from .models import PlaygroundRun, Prompt, PromptVersion, RunStatus
from .permissions import access_prompt
from .validation import check_messages

# The parameters of a run's request that its record keeps (as sent).
PARAM_FIELDS = ("model", "temperature", "max_tokens", "top_p", "seed", "stop", "tools", "tool_choice",
                "response_format")


# What the page sends: the version edited (or null), its texts, variables, the request's parameters.
TEXT_FIELDS = ("system", "body")
BUILD_FIELDS = {"version", "variables", "stream", "messages", *TEXT_FIELDS, *PARAM_FIELDS}


@dataclasses.dataclass(frozen=True)
class BuiltRun:
    prompt: Prompt | None  # None: the user's scratch draft
    version: PromptVersion | None
    draft: dict | None
    variables: dict
    chat_body: dict  # the /v1/chat/completions body the server sends
    stream: bool


def run_build(*, user, prompt_id, data) -> BuiltRun:
    """The chat request of one playground run, rendered here from the page's
    texts and variables (viewers may run; prompt_id None: the user's scratch
    draft). `draft` is None when the texts are the version's own; else a
    snapshot of them."""
    if not isinstance(data, dict):
        raise DomainError("The request body must be a JSON object.", code="invalid_json")
    unknown = sorted(set(data) - BUILD_FIELDS)
    if unknown:
        raise DomainError(f"Unrecognized field: {unknown[0]}.", code="unknown_parameter", field=unknown[0])
    prompt = None if prompt_id is None else access_prompt(user=user, prompt_id=prompt_id, need="view")
    texts: dict = {}
    for field in TEXT_FIELDS:
        texts[field] = data.get(field, "")
        if not isinstance(texts[field], str):
            raise DomainError(f"{field} must be a string.", code="invalid_type", field=field)
    texts["messages"] = check_messages(data.get("messages") or [])
    variables = data.get("variables") or {}
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise DomainError("stream must be a boolean.", code="invalid_type", field="stream")
    version = None
    if prompt is not None and data.get("version") is not None:
        version = selectors.version_get(prompt=prompt, version_id=data["version"])
    same = version is not None and texts == {"system": version.system, "messages": version.messages,
                                             "body": body_text(version)}
    _, messages = render_messages(**texts, declared=version.variables if version else {}, values=variables)
    params = {k: data[k] for k in PARAM_FIELDS if data.get(k) is not None}
    return BuiltRun(prompt=prompt, version=version, draft=None if same else texts, variables=variables,
                    chat_body={**params, "messages": messages}, stream=stream)


def run_not_found() -> DomainError:
    return DomainError("No such run.", code="run_not_found")


def _parsed(text: str, params: dict):
    """The JSON object of a structured-output run (None: plain text, or it does not parse)."""
    response_format = params.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") == "text":
        return None  # none, text, or a refused run's malformed value
    try:
        return json.loads(text)
    except ValueError:
        return None


def run_record(*, run_id, prompt: Prompt, user, version: PromptVersion | None, draft: dict | None,
               variables: dict, params: dict, output: str, tool_calls: list | None, status: str,
               error_code: str = "", prompt_tokens: int = 0, completion_tokens: int = 0,
               latency_ms: int | None = None, ttft_ms: int | None = None,
               request_id: str = "") -> PlaygroundRun:
    """Store one ended run; its output is cut to PLAYGROUND_RUN_OUTPUT_MAX_CHARS (flagged)."""
    cap = settings.PLAYGROUND_RUN_OUTPUT_MAX_CHARS
    # A refused run is kept as it was asked: nothing in it may stop its record being written.
    kept = storable({k: params[k] for k in PARAM_FIELDS if k in params})
    variables, draft, output = storable(variables), storable(draft), storable(output)
    return PlaygroundRun.objects.create(
        id=run_id, prompt=prompt, user=user, version=version, draft=draft, variables=variables,
        params=kept, model=str(kept.get("model", "")), output=output[:cap], output_size=len(output),
        output_truncated=len(output) > cap, tool_calls=tool_calls or None,
        parsed=_parsed(output, kept) if len(output) <= cap else None,
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_ms=latency_ms,
        ttft_ms=ttft_ms, status=RunStatus(status), error_code=error_code[:64], request_id=request_id[:64],
        search_text="\n".join(str(v) for v in variables.values()))


def run_list(*, user, prompt_id, search: str = "", mine: bool = False) -> QuerySet[PlaygroundRun]:
    """The runs of a prompt the account may view (else 404 `prompt_not_found`);
    prompt_id None: the account's scratch runs."""
    if prompt_id is None:
        runs = PlaygroundRun.objects.filter(prompt__isnull=True, user=user).select_related("version", "user")
    else:
        prompt = access_prompt(user=user, prompt_id=prompt_id, need="view")
        runs = PlaygroundRun.objects.filter(prompt=prompt).select_related("version", "user")
    if mine:
        runs = runs.filter(user=user)
    if search:
        runs = runs.filter(Q(output__icontains=search) | Q(search_text__icontains=search))
    return runs


def run_get(*, user, run_id) -> PlaygroundRun:
    """The run, if the account may view its prompt (a scratch run: if it is the
    account's); else 404 `run_not_found`, the same as for a run that does not exist."""
    run = (PlaygroundRun.objects.select_related("version", "user", "prompt").filter(pk=run_id).first()
           if is_uuid(run_id) else None)
    if run is None or run.prompt_id is None and run.user_id != getattr(user, "pk", None):
        raise run_not_found()  # a scratch run is its author's alone
    if run.prompt_id is None:
        return run
    try:
        access_prompt(user=user, prompt_id=run.prompt_id, need="view")
    except DomainError as exc:
        if exc.status == 404:
            raise run_not_found() from None
        raise
    return run


def run_delete(*, user, run_id) -> None:
    run = run_get(user=user, run_id=run_id)
    if run.user_id != user.pk:
        raise DomainError("Only the run's author may delete it.", code="forbidden")
    run.delete()
