"""A prompt version as the SDK hands it out (PromptVersion: render, the run's
body and headers), and what the cache holds for a label (its version, or a
split's variants, one picked per user). Data only: the clients (promptyard.client)
fetch and run; a version runs through the client that fetched it."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from typing import Any, Literal

from .errors import ApiError
from .splits import split_pick
from .template import render_texts

Source = Literal["server", "cache", "stale", "fallback"]
PARAMETER_FIELDS = ("temperature", "max_tokens", "top_p", "seed", "stop")
PROMPT_VARIABLES_MAX_BYTES = 8192  # the server's limit on X-Prompt-Variables


@dataclasses.dataclass(frozen=True)
class PromptVersion:
    """One saved version of a prompt, as `get_prompt` returns it.

    `source` says where it came from: "server" (fetched by this call), "cache"
    (fresh copy, younger than ttl), "stale" (older than ttl, served while a
    background refresh runs; never older than ttl + max_stale) or "fallback"
    (the caller's fallback, because the server could not answer: `error` says why).
    """

    prompt_id: str
    label: str
    id: str | None
    number: int | None
    model: str | None
    system: str
    template: str
    variables: dict[str, str | None]
    parameters: dict[str, Any]
    response_schema: dict | None
    tools: list
    source: Source = "server"
    # The turns between the system text and the template ({"role", "content", ...} templates).
    messages: tuple[dict, ...] = ()
    tool_choice: Any = None  # with tools: None (auto), "none", "required" or one function
    branch: str | None = None  # the branch it was saved on (None for a fallback)
    # A split label: this variant's weight, and every variant's (version id, weight).
    weight: int | None = None
    split: tuple[tuple[str, int], ...] | None = None
    fetched_at: float | None = None  # wall-clock time (time.time()) of the fetch, None for a fallback
    error: str | None = None
    _client: Any = dataclasses.field(default=None, repr=False, compare=False)  # its is_async: run or arun

    @property
    def stale(self) -> bool:
        return self.source == "stale"

    @property
    def is_fallback(self) -> bool:
        return self.source == "fallback"

    def render(self, variables: Mapping[str, object] | None = None) -> dict:
        """{"system", "body", "messages"}: the texts with `{{name}}` filled in (as
        the server renders them; RenderError names missing or unknown variables)."""
        texts = {"system": self.system, "body": self.template,
                 **{f"messages.{i}": m["content"] for i, m in enumerate(self.messages)}}
        out = render_texts(texts, declared=self.variables, values=dict(variables or {}))
        turns = [{**m, "content": out[f"messages.{i}"]} for i, m in enumerate(self.messages)]
        messages = ([{"role": "system", "content": out["system"]}] if self.system.strip() else []) + turns + [
            {"role": "user", "content": out["body"]}]
        return {"system": out["system"], "body": out["body"], "messages": messages}

    def chat_body(self, variables: Mapping[str, object] | None = None, *, stream: bool = False) -> dict:
        """The /v1/chat/completions body of a run of this version: the request a run
        by reference makes (its response schema enforced, its tools offered)."""
        if not self.model:
            raise ApiError("This version names no model: give the fallback a 'model' to run it.",
                           code="model_required")
        body = {"model": self.model, "messages": self.render(variables)["messages"], **self.parameters}
        if self.response_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "response", "schema": self.response_schema, "strict": True}}
        if self.tools:
            body["tools"] = list(self.tools)
        if self.tool_choice is not None:
            body["tool_choice"] = self.tool_choice
        if stream:
            body["stream"] = True
        return body

    def run_headers(self, variables: Mapping[str, object] | None = None) -> dict:
        """Headers that put this version (and label) in the run's usage record, and
        its variables in the generations log (left out past the server's 8 KB)."""
        if self.id is None:
            return {}
        headers = {"X-Prompt-Version": self.id, "X-Prompt-Label": self.label}
        encoded = json.dumps(dict(variables or {}), separators=(",", ":"), default=str)
        if variables and len(encoded) <= PROMPT_VARIABLES_MAX_BYTES:
            headers["X-Prompt-Variables"] = encoded
        return headers

    def run(self, variables: Mapping[str, object] | None = None, *, stream: bool = False):
        """Run through /v1/chat/completions: the chat.completion object, or (stream=True)
        an iterator of chat.completion.chunk objects. The usage record names this version."""
        if getattr(self._client, "is_async", True):
            raise TypeError("run() needs a version from Promptyard.get_prompt; use arun() for async")
        return self._client.run(self, variables, stream=stream)

    async def arun(self, variables: Mapping[str, object] | None = None, *, stream: bool = False):
        if not getattr(self._client, "is_async", False):
            raise TypeError("arun() needs a version from AsyncPromptyard.get_prompt")
        return await self._client.run(self, variables, stream=stream)


def fallback_version(fallback, *, prompt: str, label: str, error: Exception, client) -> PromptVersion:
    if isinstance(fallback, PromptVersion):
        return dataclasses.replace(fallback, source="fallback", error=str(error), _client=client)
    if isinstance(fallback, str):
        fallback = {"template": fallback}
    if not isinstance(fallback, Mapping) or "template" not in fallback:
        raise TypeError("fallback must be a PromptVersion, a template string, or a mapping with 'template'")
    unknown = set(fallback) - {"template", "system", "messages", "model", "variables", "parameters",
                               "response_schema", "tools", "tool_choice"}
    if unknown:
        raise TypeError(f"unknown fallback fields: {', '.join(sorted(unknown))}")
    return PromptVersion(
        prompt_id=prompt, label=label, id=None, number=None, model=fallback.get("model"),
        system=fallback.get("system", ""), template=fallback["template"],
        variables=dict(fallback.get("variables") or {}), parameters=dict(fallback.get("parameters") or {}),
        response_schema=fallback.get("response_schema"), tools=list(fallback.get("tools") or []),
        messages=tuple(fallback.get("messages") or ()), tool_choice=fallback.get("tool_choice"),
        source="fallback", error=str(error), _client=client)


def version_from(v: dict, body: str, *, prompt: str, label: str, client) -> PromptVersion:
    return PromptVersion(
        prompt_id=prompt, label=label, id=v["id"], number=v.get("number"), model=v.get("model"),
        branch=v.get("branch"),
        system=v.get("system") or "", template=body, variables=dict(v.get("variables") or {}),
        parameters={k: v[k] for k in PARAMETER_FIELDS if v.get(k) not in (None, [])},
        response_schema=v.get("response_schema"), tools=list(v.get("tools") or []),
        messages=tuple(v.get("messages") or ()), tool_choice=v.get("tool_choice"),
        source="server", fetched_at=time.time(), _client=client)


@dataclasses.dataclass(frozen=True)
class LabelValue:
    """What the cache holds for a label: its version, or a split's variants."""

    primary: PromptVersion
    variants: tuple[tuple[PromptVersion, int], ...] | None = None

    @property
    def id(self) -> str | None:  # the label's (first) version: what the cache tests compare
        return self.primary.id


def choose(value: LabelValue, user: str | None, *, source: Source) -> PromptVersion:
    if not value.variants:
        return dataclasses.replace(value.primary, source=source)
    weights = [w for _, w in value.variants]
    version, weight = value.variants[split_pick(weights, prompt_id=value.primary.prompt_id,
                                                label=value.primary.label, user=user)]
    return dataclasses.replace(version, source=source, weight=weight,
                               split=tuple((v.id, w) for v, w in value.variants))


def label_value(data: dict, bodies: dict, *, prompt: str, label: str, client) -> LabelValue:
    def make(v):
        return version_from(v, bodies[v["id"]], prompt=prompt, label=label, client=client)

    if not data.get("split"):
        return LabelValue(make(data["version"]))
    variants = tuple((make(item["version"]), item["weight"]) for item in data["split"])
    return LabelValue(variants[0][0], variants)


def versions_of(data: dict) -> list[dict]:
    return [item["version"] for item in data.get("split") or ()] or [data["version"]]
