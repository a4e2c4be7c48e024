"""A prompt's whole history as one JSON document ("promptyard.prompt-history",
format_version 1, described in docs/prompts.md), and its import as a new prompt.

Versions refer to each other by number, so a file is the same whichever
instance wrote it. An import checks the whole document (shape, types, the
numbering, every parent and label, every body against its SHA-256) before the
first write, then creates the versions with `version_create` in number order
(a parent always has a smaller number than its children, so the numbers come
out as in the file) and the labels with `label_move` / `label_split` /
`label_protect`, all in one transaction: a refused import leaves nothing.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from django.conf import settings
from django.db import transaction

from core.error_codes import DomainError
from sharing.audit import audit_record

from .bodies import body_text
from .models import LABEL_NAME_PATTERN, Prompt, PromptVersion
from .protection import label_protect
from .services import label_move, label_split, prompt_create, version_create
from .splits import check_variants
from .validation import check_utf8

FORMAT = "promptyard.prompt-history"
FORMAT_VERSION = 1

# Field -> the JSON types it may hold in a version ("null" included where it may be absent).
VERSION_TYPES: dict[str, tuple[type, ...]] = {
    "number": (int,), "parent": (int, type(None)), "merge_parent": (int, type(None)),
    "message": (str,), "branch": (str,), "model_name": (str,), "temperature": (int, float, type(None)),
    "max_tokens": (int, type(None)), "top_p": (int, float, type(None)), "seed": (int, type(None)),
    "stop": (list,), "system": (str,),
    "messages": (list,), "variables": (dict,),
    "response_schema": (dict, type(None)), "tools": (list,),
    "tool_choice": (str, dict, type(None)), "body": (str,),
    "body_sha256": (str,),
}
# Written for people and other tools; an import reads and ignores them.
VERSION_INFO = ("author", "created_at")
# version_create's field names -> the file's.
FIELD_NAMES = {"model": "model_name", None: "body"}
LABEL_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,), "version": (int,), "split": (list, type(None)), "protected": (bool,),
    "require_approval": (bool,),
}


def history_export(prompt: Prompt) -> dict[str, Any]:
    """Every version (oldest first) and every label of `prompt`, bodies inline."""
    versions = list(PromptVersion.objects.filter(prompt=prompt).select_related("author", "payload_blob")
                    .order_by("number"))
    number = {str(v.pk): v.number for v in versions}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "prompt": {"title": prompt.title, "description": prompt.description},
        "versions": [{
            "number": v.number,
            "parent": number[str(v.parent_id)] if v.parent_id else None,
            "merge_parent": number[str(v.merge_parent_id)] if v.merge_parent_id else None,
            "author": v.author.get_username() if v.author else None,
            "created_at": v.created_at.isoformat(),
            "message": v.message, "branch": v.branch, "model_name": v.model_name,
            "temperature": v.temperature,
            "max_tokens": v.max_tokens, "top_p": v.top_p, "seed": v.seed, "stop": v.stop, "system": v.system,
            "messages": v.messages, "variables": v.variables,
            "response_schema": v.response_schema, "tools": v.tools, "tool_choice": v.tool_choice,
            "body": body_text(v), "body_sha256": v.body_sha256,
        } for v in versions],
        "labels": [{
            "name": label.name,
            "version": number[str(label.version_id)],
            "split": [{"version": number[str(s["version"])], "weight": s["weight"]} for s in label.split]
            if label.split else None,
            "protected": label.protected, "require_approval": label.require_approval,
        } for label in prompt.labels.order_by("name")],
    }


def _bad(message: str, *, code: str = "invalid_type", field: str) -> DomainError:
    return DomainError(message, code=code, field=field)


def _typed(item, types: dict[str, tuple[type, ...]], *, field: str, optional=(), ignored=()) -> dict:
    """`item` as an object with exactly these keys (optional ones may be absent), each of its type."""
    if not isinstance(item, dict):
        raise _bad(f"{field} must be an object.", field=field)
    unknown = sorted(set(item) - set(types) - set(ignored))
    if unknown:
        raise _bad(f"{field} has unknown fields: {', '.join(unknown)}.", code="unknown_parameter",
                   field=f"{field}.{unknown[0]}")
    for key, allowed in types.items():
        if key not in item:
            if key in optional:
                continue
            raise _bad(f"{field}.{key} is required.", code="missing_required_parameter",
                       field=f"{field}.{key}")
        value = item[key]
        # bool is an int in Python, never in this format.
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in allowed)
            raise _bad(f"{field}.{key} must be {names}.", field=f"{field}.{key}")
    return item


def _bound(name: str, items: list, limit: int, *, code: str) -> None:
    if len(items) > limit:
        raise DomainError(f"The file has {len(items)} {name}; an import takes at most {limit}.",
                          code=code, field=name, extra={f"max_{name}": limit})


def _check_header(document) -> tuple[dict, list, list]:
    if not isinstance(document, dict):
        raise _bad("The document must be a JSON object.", field="document")
    if document.get("format") != FORMAT:
        raise _bad(f"format must be {FORMAT!r}.", code="invalid_format", field="format")
    if document.get("format_version") != FORMAT_VERSION or isinstance(document.get("format_version"), bool):
        raise _bad(f"This server reads format_version {FORMAT_VERSION}.", code="unsupported_format_version",
                   field="format_version")
    head = _typed(document.get("prompt"), {"title": (str,), "description": (str,)}, field="prompt",
                  optional=("description",))
    if not 1 <= len(head["title"].strip()) <= 200:
        raise _bad("prompt.title must be 1 to 200 characters.", code="invalid_value", field="prompt.title")
    versions, labels = document.get("versions"), document.get("labels", [])
    if not isinstance(versions, list) or not versions:
        raise _bad("versions must be a non-empty list.", field="versions")
    if not isinstance(labels, list):
        raise _bad("labels must be a list.", field="labels")
    _bound("versions", versions, settings.PROMPT_IMPORT_MAX_VERSIONS, code="import_too_many_versions")
    _bound("labels", labels, settings.PROMPT_IMPORT_MAX_LABELS, code="import_too_many_labels")
    return head, versions, labels


def _check_versions(versions: list) -> list[dict]:
    """Typed, numbered 1..N in order, each parent earlier than its child, each body its hash."""
    out = []
    for i, raw in enumerate(versions):
        field = f"versions[{i}]"
        # Fields absent from files written before versions had them.
        v = _typed(raw, VERSION_TYPES, field=field, optional=("messages", "seed", "tool_choice", "branch"),
                   ignored=VERSION_INFO)
        if v["number"] != i + 1:
            raise _bad(f"{field}.number is {v['number']}: versions are numbered 1, 2, ... in file order.",
                       code="invalid_value", field=f"{field}.number")
        for key in ("parent", "merge_parent"):
            ref = v[key]
            if ref is not None and not 1 <= ref <= len(versions):
                raise _bad(f"{field}.{key} {ref} is not a version of this file.", code="parent_not_found",
                           field=f"{field}.{key}")
            if ref is not None and ref >= v["number"]:
                # Every cycle has such an edge; a parent comes before its children.
                raise _bad(f"{field}.{key} {ref} does not come before version {v['number']}.",
                           code="parent_cycle", field=f"{field}.{key}")
        if (v["parent"] is None) != (i == 0):
            raise _bad("Version 1 is the root (no parent); every other version has one.",
                       code="parent_required" if i else "parent_cycle", field=f"{field}.parent")
        if v["merge_parent"] is not None and v["merge_parent"] == v["parent"]:
            raise _bad(f"{field}: a version cannot be merged with itself.", code="merge_same_version",
                       field=f"{field}.merge_parent")
        data = check_utf8(v["body"], field=f"{field}.body", max_bytes=settings.PROMPT_BODY_MAX_BYTES)
        if hashlib.sha256(data).hexdigest() != v["body_sha256"]:
            raise _bad(f"The body of version {v['number']} does not match its body_sha256.",
                       code="import_body_hash_mismatch", field=f"{field}.body_sha256")
        out.append(v)
    return out


def _check_labels(labels: list, count: int) -> list[dict]:
    out, names = [], set()
    for i, raw in enumerate(labels):
        field = f"labels[{i}]"
        label = _typed(raw, LABEL_TYPES, field=field, optional=("split", "protected", "require_approval"))
        if not re.fullmatch(LABEL_NAME_PATTERN, label["name"]):
            raise _bad(f"{field}.name {label['name']!r} is not a label name: 1-63 characters, lowercase "
                       "letters, digits, '.', '_' or '-'.", code="invalid_label_name", field=f"{field}.name")
        if label["name"] in names:
            raise _bad(f"Label {label['name']!r} appears twice.", code="invalid_value", field=f"{field}.name")
        names.add(label["name"])
        refs = [label["version"]]
        if label.get("split") is not None:
            try:
                variants = check_variants(label["split"])
            except DomainError as exc:
                raise DomainError(exc.message, code=exc.code, field=f"{field}.split",
                                  extra=exc.extra) from None
            if variants[0]["version"] != str(label["version"]):
                raise _bad(f"{field}: the first variant of a split is the label's version.",
                           code="invalid_split", field=f"{field}.split")
            for j, variant in enumerate(label["split"]):
                if not isinstance(variant["version"], int) or isinstance(variant["version"], bool):
                    raise _bad(f"{field}.split[{j}].version must be a version number.",
                               field=f"{field}.split[{j}].version")
                refs.append(variant["version"])
        for ref in refs:
            if not 1 <= ref <= count:
                raise _bad(f"{field} names version {ref}, which the file does not hold.",
                           code="version_not_found", field=f"{field}.version")
        out.append(label)
    return out


def _create_versions(prompt: Prompt, owner, versions: list[dict]) -> dict[int, PromptVersion]:
    made: dict[int, PromptVersion] = {}
    for i, v in enumerate(versions):
        try:
            made[v["number"]] = version_create(
                prompt=prompt, author=owner, body=v["body"], model_name=v["model_name"],
                parent_id=made[v["parent"]].pk if v["parent"] else None,
                merge_parent_id=made[v["merge_parent"]].pk if v["merge_parent"] else None,
                temperature=v["temperature"], max_tokens=v["max_tokens"], top_p=v["top_p"],
                seed=v.get("seed"), stop=v["stop"],
                system=v["system"], messages=v.get("messages", []), variables=v["variables"],
                response_schema=v["response_schema"],
                tools=v["tools"], tool_choice=v.get("tool_choice"), message=v["message"],
                branch=v.get("branch"), branch_exists_ok=True)
        except DomainError as exc:  # the same rules as any new version, named in the file's terms
            raise DomainError(f"Version {v['number']}: {exc.message}", code=exc.code,
                              field=f"versions[{i}].{FIELD_NAMES.get(exc.field, exc.field)}",
                              extra=exc.extra) from None
    return made


def _create_labels(prompt: Prompt, owner, labels: list[dict], made: dict[int, PromptVersion]) -> None:
    for label in labels:
        name, target = label["name"], made[label["version"]].pk
        if label.get("split"):
            variants = [{"version": str(made[int(s["version"])].pk), "weight": s["weight"]}
                        for s in label["split"]]
            label_split(prompt=prompt, name=name, variants=variants, expected_version_id=None, actor=owner)
        else:
            label_move(prompt=prompt, name=name, version_id=target, expected_version_id=None, actor=owner)
        if label.get("protected") or label.get("require_approval"):
            label_protect(prompt=prompt, name=name, protected=bool(label.get("protected")),
                          require_approval=bool(label.get("require_approval")), actor=owner)


def history_import(*, owner, document) -> Prompt:
    """A new prompt owned by `owner` holding the document's versions and labels.
    Numbers, parents, merges and body hashes are the file's; every version's
    author is `owner` and its created_at the time of the import."""
    head, versions, labels = _check_header(document)
    checked = _check_versions(versions)
    checked_labels = _check_labels(labels, len(checked))
    with transaction.atomic():
        prompt = prompt_create(owner=owner, title=head["title"].strip(),
                               description=head.get("description", ""))
        made = _create_versions(prompt, owner, checked)
        _create_labels(prompt, owner, checked_labels, made)
        audit_record(prompt_id=prompt.pk, actor=owner, action="prompt.import", target=f"prompt:{prompt.pk}",
                     detail={"versions": len(checked), "labels": len(checked_labels)})
    prompt.refresh_from_db()
    return prompt
