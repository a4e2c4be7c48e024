"""Running a saved version: the one definition of the chat request a version
makes, shared by the run-by-reference routes and by export (so exported code
and a run by reference send the same request).

The request is the version's frozen model and parameters, plus messages: a
system message with the rendered system text when the saved system text is
not blank, then the version's own turns rendered (`messages`), then the
rendered body as the last user message. The playground's runs of a draft are
built by the same functions (playground.runs).
"""

from __future__ import annotations

import dataclasses

from core.error_codes import DomainError

from .. import selectors
from ..bodies import body_text
from ..models import PromptVersion
from ..permissions import access_prompt
from ..splits import check_user_key, split_pick
from ..templating import template_render

# The only fields a run request may carry: the version decides everything else.
RUN_FIELDS = {"variables", "stream", "user"}
FROZEN_FIELDS = {"model", "messages", "temperature", "max_tokens", "max_completion_tokens", "top_p",
                 "stop", "seed", "system"}


def version_params(version: PromptVersion) -> dict:
    """The version's frozen parameters as chat-completions fields; unset ones
    are left out so the server's defaults apply, as they would in the playground."""
    params = {}
    for field in ("temperature", "max_tokens", "top_p", "seed"):
        value = getattr(version, field)
        if value is not None:
            params[field] = value
    if version.stop:
        params["stop"] = list(version.stop)
    if version.response_schema is not None:  # enforced on every run (structured output)
        params["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "response", "schema": version.response_schema, "strict": True}}
    if version.tools:  # offered on every run; the model may answer with calls (tool_choice auto)
        params["tools"] = version.tools
    if version.tool_choice is not None:
        params["tool_choice"] = version.tool_choice
    return params


def template_texts(*, system: str, messages: list[dict], body: str) -> dict[str, str]:
    """Every template text of a prompt by name: "system", "messages.<i>" and "body"."""
    return {"system": system, **{f"messages.{i}": m["content"] for i, m in enumerate(messages)},
            "body": body}


def render_messages(*, system: str, messages: list[dict], body: str, declared: dict, values: dict
                    ) -> tuple[dict[str, str], list[dict]]:
    """The rendered system text and body, and the chat messages of one run (400
    naming missing or unknown variables)."""
    out = template_render(texts=template_texts(system=system, messages=messages, body=body),
                          declared=declared, values=values)
    turns = [{**m, "content": out[f"messages.{i}"]} for i, m in enumerate(messages)]
    head = [{"role": "system", "content": out["system"]}] if system.strip() else []
    tail = [{"role": "user", "content": out["body"]}]
    return {"system": out["system"], "body": out["body"]}, head + turns + tail


def version_render(*, version: PromptVersion, variables: dict, body: str | None = None
                   ) -> tuple[dict[str, str], list[dict]]:
    """The rendered texts ({"system", "body"}) and the messages of one run of a
    saved version. `body`: the version's body text when the caller already has it."""
    return render_messages(system=version.system, messages=version.messages,
                           body=body_text(version) if body is None else body,
                           declared=version.variables, values=variables)


def version_chat_body(*, version: PromptVersion, variables: dict, body: str | None = None) -> dict:
    """The /v1/chat/completions body of one run."""
    _, messages = version_render(version=version, variables=variables, body=body)
    return {"model": version.model_name, "messages": messages, **version_params(version)}


@dataclasses.dataclass(frozen=True)
class PreparedRun:
    version: PromptVersion
    chat_body: dict
    stream: bool
    label: str | None = None
    user: str | None = None  # the caller's end-user key (picks a split's variant)
    variables: dict = dataclasses.field(default_factory=dict)


def check_run_request(data) -> tuple[dict, bool]:
    """(variables, stream) of a run request; anything else is a 400 naming the field."""
    if not isinstance(data, dict):
        raise DomainError("The request body must be a JSON object.", code="invalid_json")
    for field in data:
        if field in FROZEN_FIELDS:
            raise DomainError(f"'{field}' cannot be set on a run: the saved version's model and parameters "
                              "apply. Save a new version to change them.", code="frozen_parameter",
                              field=field)
        if field not in RUN_FIELDS:
            raise DomainError(f"Unrecognized field: {field}.", code="unknown_parameter", field=field)
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise DomainError("variables must be an object of name -> value.", code="invalid_type",
                          field="variables")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise DomainError("stream must be a boolean.", code="invalid_type", field="stream")
    return variables, stream


def run_prepare(*, user, prompt_id, data, version_id=None, label: str | None = None,
                share_token: str | None = None, client_addr: str = "") -> PreparedRun:
    """Check access (viewers may run), pick the version (by id, or the one
    `label` points at now) and build its chat request."""
    variables, stream = check_run_request(data)
    split_user = check_user_key(data.get("user"))
    if label is not None:
        prompt = access_prompt(user=user, prompt_id=prompt_id, need="view", share_token=share_token,
                               client_addr=client_addr)
        found = selectors.label_get(prompt=prompt, name=label)
        version = found.version
        if found.split:  # an A/B split: this user's variant (random by weight without a user key)
            picked = split_pick(found.split, prompt_id=prompt.pk, label=label, user=split_user)
            version = selectors.version_get(prompt=prompt, version_id=picked)
    else:
        prompt = access_prompt(user=user, prompt_id=prompt_id, need="view", share_token=share_token,
                               client_addr=client_addr, version_id=version_id)
        version = selectors.version_get(prompt=prompt, version_id=version_id)
    return PreparedRun(version=version, chat_body=version_chat_body(version=version, variables=variables),
                       stream=stream, label=label, user=split_user, variables=variables)
