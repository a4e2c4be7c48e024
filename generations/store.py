"""Storing logged generations: called by the usage writer with each batch's
entries (inference_client.usage), in one query per distinct caller of an
unchecked claim plus one INSERT.

An entry is stored only for a version that still exists and, for a /v1 call's
X-Prompt-Version claim (not checked on the request's path), only when its caller
may view the prompt: no one logs into a prompt they cannot see. Outputs and
messages past GENERATIONS_INLINE_MAX_CHARS go to the object store; the row keeps
an output's head (the record stage cut the output at GENERATIONS_OUTPUT_MAX_CHARS).
GENERATIONS_REDACT, when set, sees every entry first. Once stored, online
evaluation's rules pick their share of them (generations.online).
"""

from __future__ import annotations

import datetime
import json
import logging
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.module_loading import import_string

from core.blobstore import get_blob_store
from core.storable import storable
from inference_protocol.pricing import token_cost
from playground.models import PromptVersion
from playground.permissions import prompts_visible_to

from .models import Generation
from .online import online_sample

logger = logging.getLogger(__name__)
SEARCH_CHARS = 4000


def _visible(entries: list[tuple[dict, dict]], prompt_of: dict) -> set[tuple[int, str]]:
    """(user id, prompt id) of the unchecked claims whose caller may view the prompt."""
    wanted: dict[int, set] = {}
    for row, entry in entries:
        if not entry["checked"] and (prompt := prompt_of.get(row["prompt_version"])) is not None:
            wanted.setdefault(row["user_id"], set()).add(prompt)
    allowed = set()
    for user in get_user_model().objects.filter(pk__in=wanted):
        for pk in prompts_visible_to(user=user).filter(pk__in=wanted[user.pk]).values_list("pk", flat=True):
            allowed.add((user.pk, str(pk)))
    return allowed


def _cost(model: str, prompt_tokens: int, completion_tokens: int) -> Decimal | None:
    """USD at INFERENCE_PRICES (None: the model is not priced)."""
    cost = token_cost(model, prompt_tokens, completion_tokens)
    return None if cost is None else Decimal(str(cost))


def _offload(key: str, text: str) -> str:
    """`text` in the object store under `key` ("" when the store refused it: the row keeps the head)."""
    try:
        get_blob_store().put(key, text.encode())
    except Exception:
        logger.exception("generation body %s not stored; its head is kept", key)
        return ""
    return key


def _generation(row: dict, entry: dict, prompt_id: str) -> Generation:
    inline, head = settings.GENERATIONS_INLINE_MAX_CHARS, settings.GENERATIONS_PREVIEW_CHARS
    output, messages = entry["output"], entry["messages"]
    output_blob = messages_blob = ""
    if len(output) > inline:
        output_blob = _offload(f"generations/{row['request_id']}/output.txt", output)
    if len(raw := json.dumps(messages)) > inline:
        messages_blob = _offload(f"generations/{row['request_id']}/messages.json", raw)
        if messages_blob:
            messages = None
    shown = output if len(output) <= inline else output[:head]
    variables = entry["variables"]
    search = " ".join(str(v) for v in variables.values()) + "\n" + shown[:SEARCH_CHARS]
    return Generation(
        request_id=row["request_id"], prompt_id=prompt_id, version_id=row["prompt_version"],
        label=row.get("prompt_label") or "", user_id=row["user_id"], api_key_id=row.get("api_key_id"),
        source=entry["source"], model=row["model"], status=row["status"], error_code=row["error_code"],
        cache_hit=row.get("cache_hit") or "", variables=variables, messages=messages,
        messages_blob=messages_blob, params=entry["params"], output=shown,
        output_size=entry.get("output_size", len(output)),
        output_blob=output_blob, prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        latency_ms=row["latency_ms"], ttft_ms=row.get("ttft_ms"),
        cost=_cost(row["model"], row["prompt_tokens"], row["completion_tokens"]),
        search_text=search[:SEARCH_CHARS].lower(),
        created_at=datetime.datetime.fromtimestamp(entry["at"], tz=datetime.UTC))


def generations_store(entries: list[tuple[dict, dict]]) -> int:
    """Store the (usage record, log entry) pairs that may be stored; how many were."""
    prompt_of = {str(v): str(p) for v, p in PromptVersion.objects.filter(
        pk__in={row["prompt_version"] for row, _ in entries}).values_list("pk", "prompt_id")}
    allowed = _visible(entries, prompt_of)
    redact = import_string(settings.GENERATIONS_REDACT) if settings.GENERATIONS_REDACT else None
    rows = []
    for row, entry in entries:
        prompt_id = prompt_of.get(row["prompt_version"])
        if prompt_id is None or (not entry["checked"] and (row["user_id"], prompt_id) not in allowed):
            continue  # a version deleted since, or a claim on a prompt the caller cannot see
        entry = storable(redact(entry) if redact else entry)
        rows.append(_generation(row, entry, prompt_id))
    Generation.objects.bulk_create(rows, ignore_conflicts=True)
    if rows:
        _online(rows)
    return len(rows)


def _online(rows: list[Generation]) -> None:
    """Online evaluation's share of the batch (generations.online); a failure there never fails the write."""
    try:
        online_sample(rows)
    except Exception:
        logger.exception("online evaluation sampling failed; the generations are stored")
