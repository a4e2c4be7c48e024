"""Writes: prompts, versions (edits make children), label moves, undo/redo.

Everything is validated before the first write, and each write runs in one
transaction, so a failed request leaves no version row and no label move.
"""

from __future__ import annotations

import hashlib
import re

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core.error_codes import DomainError
from core.ids import is_uuid
from sharing.audit import audit_record
from webhooks.services import webhook_emit

from .bodies import body_cache, storage_fields
from .branches import branch_for
from .label_locks import check_label_unlocked
from .models import LABEL_NAME_PATTERN, Label, LabelMove, MoveKind, Prompt, PromptVersion
from .splits import check_variants
from .uploads import upload_verify
from .validation import check_messages, check_params, check_utf8


def prompt_create(*, owner, title: str, description: str = "") -> Prompt:
    return Prompt.objects.create(owner=owner, title=title, description=description)


def _check_parent(*, prompt: Prompt, parent_id, version_id) -> PromptVersion | None:
    if parent_id is None:
        if PromptVersion.objects.filter(prompt=prompt).exists():
            raise DomainError("This prompt already has versions: name the version you edited as parent.",
                              code="parent_required", field="parent")
        return None
    if version_id is not None and str(parent_id) == str(version_id):
        raise DomainError("A version cannot be its own parent.", code="parent_cycle", field="parent")
    parent = PromptVersion.objects.select_related("payload_blob").filter(pk=parent_id).first()
    if parent is None or parent.prompt_id != prompt.pk:
        # Same answer for "absent" and "another prompt's": no probing across prompts.
        raise DomainError("The parent is not a version of this prompt.", code="parent_not_found",
                          field="parent")
    return parent


VERSION_FIELDS = ("body_sha256", "model_name", "temperature", "max_tokens", "top_p", "seed", "stop", "system",
                  "messages", "variables", "response_schema", "tools", "tool_choice")


def _check_changed(parent: PromptVersion, **fields) -> None:
    """A child identical to its parent in every field a run uses is refused: it
    would be a version that changes nothing (a merge records two parents, so it may)."""
    if all(getattr(parent, name) == fields[name] for name in VERSION_FIELDS):
        raise DomainError(f"Nothing changed from version {parent.number}: edit the prompt, its model or "
                          "its parameters before saving.", code="version_unchanged",
                          field="body")


def version_create(
    *, prompt: Prompt, author, parent_id=None, body: str | None = None, body_upload: dict | None = None,
    model_name: str | None = None, temperature: float | None = None, max_tokens: int | None = None,
    top_p: float | None = None, seed: int | None = None, stop: list | None = None, system: str = "",
    messages: list | None = None,
    variables: dict | None = None,
    response_schema: dict | None = None, tools: list | None = None, tool_choice=None, message: str = "",
    version_id=None,
    merge_parent_id=None,
    branch: str | None = None,
    branch_exists_ok: bool = False,
) -> PromptVersion:
    """Create a child of `parent_id` (or the root). Two edits of one parent make
    two children: nothing is locked but the instant of numbering."""
    model_name = model_name or settings.DEFAULT_MODEL
    stop = [] if stop is None else stop
    variables = {} if variables is None else variables
    tools = [] if tools is None else tools
    messages = check_messages([] if messages is None else messages)
    check_params(model_name=model_name, temperature=temperature, max_tokens=max_tokens, top_p=top_p,
                 seed=seed, stop=stop, variables=variables, response_schema=response_schema, tools=tools,
                 tool_choice=tool_choice)
    check_utf8(system, field="system", max_bytes=settings.PROMPT_SYSTEM_MAX_BYTES)
    check_utf8(message, field="message", max_bytes=settings.PROMPT_SYSTEM_MAX_BYTES)
    if (body is None) == (body_upload is None):
        raise DomainError("Give exactly one of body or body_upload.", code="body_required", field="body")
    parent = _check_parent(prompt=prompt, parent_id=parent_id, version_id=version_id)
    merge_parent = None
    if merge_parent_id is not None:
        from .merging_service import check_merge_parents

        merge_parent = check_merge_parents(prompt=prompt, parent=parent, merge_parent_id=merge_parent_id)
    branch = branch_for(prompt=prompt, parent=parent, requested=branch, exists_ok=branch_exists_ok)
    if version_id is not None and PromptVersion.objects.filter(pk=version_id).exists():
        raise DomainError("A version with this id already exists.", code="version_exists", field="id")

    if body is not None:
        data = check_utf8(body, field="body", max_bytes=settings.PROMPT_BODY_MAX_BYTES)
        if not body.strip():
            raise DomainError("The body is empty: write the message template the version runs.",
                              code="empty_body", field="body")
        sha, blob, text = hashlib.sha256(data).hexdigest(), None, body
    else:
        blob = upload_verify(user=author, prompt=prompt, handle=body_upload.get("upload", ""),
                             sha256=body_upload.get("sha256", ""))
        data, text, sha = b"", "", blob.sha256
    if parent is not None and merge_parent is None:
        _check_changed(parent, body_sha256=sha, model_name=model_name, temperature=temperature,
                       max_tokens=max_tokens, top_p=top_p, seed=seed, stop=stop, system=system,
                       messages=messages, variables=variables, response_schema=response_schema, tools=tools,
                       tool_choice=tool_choice)
    # Payloads go to the store before the transaction: an object without a
    # row is harmless (content-addressed), a row without an object is not.
    fields = storage_fields(data=data, text=text, parent=parent, blob=blob)
    with transaction.atomic():
        Prompt.objects.filter(pk=prompt.pk).update(version_count=F("version_count") + 1,
                                                   updated_at=timezone.now())
        number = Prompt.objects.values_list("version_count", flat=True).get(pk=prompt.pk)
        extra = {"id": version_id} if version_id is not None else {}
        version = PromptVersion(
            prompt=prompt, parent=parent, merge_parent=merge_parent, number=number,
            depth=max(parent.depth, merge_parent.depth if merge_parent else 0) + 1 if parent else 0,
            author=author, message=message, branch=branch, model_name=model_name, temperature=temperature,
            max_tokens=max_tokens, top_p=top_p, seed=seed, stop=stop, system=system, messages=messages,
            variables=variables, response_schema=response_schema, tools=tools, tool_choice=tool_choice,
            body_size=blob.size if blob else len(data),
            body_sha256=sha, **fields, **extra,
        )
        version.save()
        webhook_emit(prompt=prompt, event="version.created", data={
            "version": {"id": str(version.pk), "number": number, "parent": str(parent.pk) if parent else None,
                        "merge_parent": str(merge_parent.pk) if merge_parent else None,
                        "branch": branch, "message": message, "model": model_name,
                        "author": author.get_username() if author else None}})
    if text:
        # Keyed by content hash, so correct even if an outer transaction rolls
        # back; saves rebuilding the parent when this version is edited next.
        body_cache.put(sha, text)
    return version


def _check_label_name(name: str) -> None:
    if not re.fullmatch(LABEL_NAME_PATTERN, name or ""):
        raise DomainError("Label names are 1-63 characters: lowercase letters, digits, '.', '_' or '-', "
                          "starting with a letter or digit.", code="invalid_label_name", field="name")


def _conflict(name: str, current_id) -> DomainError:
    return DomainError(f"Label {name!r} does not hold the expected version.", code="label_conflict",
                       field="expected",
                       extra={"current_version": str(current_id) if current_id else None})


def _record(*, label: Label, kind: str, from_id, to_id, actor, reverts=None) -> LabelMove:
    return LabelMove.objects.create(label=label, kind=kind, from_version_id=from_id, to_version_id=to_id,
                                    actor=actor, reverts=reverts)


def _audit_label(*, prompt: Prompt, name: str, kind: str, from_id, to_id, actor) -> None:
    # Same transaction as the move: an audited move always happened, and vice versa.
    detail = {"from_version": str(from_id) if from_id else None, "to_version": str(to_id) if to_id else None}
    audit_record(prompt_id=prompt.pk, actor=actor, action=f"label.{kind}", target=f"label:{name}",
                 detail=detail)
    webhook_emit(prompt=prompt, event="label.moved", data={
        "label": name, "kind": kind, **detail,
        "actor": actor.get_username() if actor is not None and actor.is_authenticated else None})


def label_move(*, prompt: Prompt, name: str, version_id, expected_version_id, actor,
               approved: bool = False) -> Label:
    """Compare-and-set: move `name` to `version_id` only if it now holds
    `expected_version_id` (None: only if the label does not exist yet)."""
    _check_label_name(name)
    target = PromptVersion.objects.filter(pk=version_id, prompt=prompt).values_list("pk", flat=True).first()
    if target is None:
        raise DomainError("The version is not a version of this prompt.", code="version_not_found",
                          field="version")
    with transaction.atomic():
        label = Label.objects.select_for_update().filter(prompt=prompt, name=name).first()
        current = label.version_id if label else None
        if str(current) != str(expected_version_id):
            raise _conflict(name, current)
        check_label_unlocked(label, prompt=prompt, action="move", approved=approved)
        if label is None:
            try:
                with transaction.atomic():
                    label = Label.objects.create(prompt=prompt, name=name, version_id=target)
            except IntegrityError:  # created concurrently by someone else
                now = Label.objects.filter(prompt=prompt, name=name).values_list("version_id", flat=True)
                raise _conflict(name, now.first()) from None
        elif current == target and not label.split:
            return label  # already there: not a move
        else:
            label.version_id, label.split = target, None  # a move ends any split
            label.save(update_fields=["version", "split", "updated_at"])
        _record(label=label, kind=MoveKind.MOVE, from_id=current, to_id=target, actor=actor)
        _audit_label(prompt=prompt, name=name, kind=MoveKind.MOVE, from_id=current, to_id=target, actor=actor)
    return label


def label_delete(*, prompt: Prompt, name: str, actor, expected_version_id=None) -> None:
    """Remove a label (optionally only if it holds `expected_version_id`). Its
    moves go with it; the audit log keeps the removal and where it pointed."""
    with transaction.atomic():
        label = _locked_label(prompt, name)
        if expected_version_id is not None and str(label.version_id) != str(expected_version_id):
            raise _conflict(name, label.version_id)
        check_label_unlocked(label, prompt=prompt, action="delete")
        _audit_label(prompt=prompt, name=name, kind="delete", from_id=label.version_id, to_id=None,
                     actor=actor)
        label.delete()


def label_split(*, prompt: Prompt, name: str, variants, expected_version_id, actor) -> Label:
    """Point `name` at two or more versions with weights (an A/B split, see
    playground.splits); compare-and-set on the version it holds now (its first
    variant when split; None: the label must not exist yet). A later move, undo
    or redo ends the split."""
    _check_label_name(name)
    variants = check_variants(variants)
    ids = [v["version"] for v in variants]
    found = {str(pk) for pk in PromptVersion.objects.filter(prompt=prompt, pk__in=[
        i for i in ids if is_uuid(i)]).values_list("pk", flat=True)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise DomainError(f"Not versions of this prompt: {', '.join(missing)}.", code="version_not_found",
                          field="variants", extra={"missing": missing})
    primary = variants[0]["version"]
    with transaction.atomic():
        label = Label.objects.select_for_update().filter(prompt=prompt, name=name).first()
        current = label.version_id if label else None
        if str(current) != str(expected_version_id):
            raise _conflict(name, current)
        check_label_unlocked(label, prompt=prompt, action="split")
        if label is None:
            try:
                with transaction.atomic():
                    label = Label.objects.create(prompt=prompt, name=name, version_id=primary, split=variants)
            except IntegrityError:
                now = Label.objects.filter(prompt=prompt, name=name).values_list("version_id", flat=True)
                raise _conflict(name, now.first()) from None
        else:
            label.version_id, label.split = primary, variants
            label.save(update_fields=["version", "split", "updated_at"])
        if str(current) != primary:
            _record(label=label, kind=MoveKind.MOVE, from_id=current, to_id=primary, actor=actor)
        audit_record(prompt_id=prompt.pk, actor=actor, action="label.split", target=f"label:{name}",
                     detail={"from_version": str(current) if current else None, "variants": variants})
        webhook_emit(prompt=prompt, event="label.moved", data={
            "label": name, "kind": "split", "from_version": str(current) if current else None,
            "to_version": primary, "variants": variants,
            "actor": actor.get_username() if actor is not None and actor.is_authenticated else None})
    return label




def _stacks(label: Label) -> tuple[list[LabelMove], list[LabelMove]]:
    """Replay history into editor-style undo and redo stacks."""
    undo: list[LabelMove] = []
    redo: list[LabelMove] = []
    for move in label.moves.order_by("id"):
        if move.kind == MoveKind.MOVE:
            undo.append(move)
            redo.clear()
        elif move.kind == MoveKind.UNDO:
            undo.pop()
            redo.append(move)
        else:
            redo.pop()
            undo.append(move)
    return undo, redo


def locked_label(prompt: Prompt, name: str) -> Label:
    """The label, locked until the transaction ends (404 label_not_found)."""
    label = Label.objects.select_for_update().filter(prompt=prompt, name=name).first()
    if label is None:
        raise DomainError(f"No label {name!r} on this prompt.", code="label_not_found",
                          field="name")
    return label


def _locked_label(prompt: Prompt, name: str) -> Label:
    _check_label_name(name)
    return locked_label(prompt, name)


def _step(*, prompt, name, actor, expected_version_id, kind) -> Label:
    with transaction.atomic():
        label = _locked_label(prompt, name)
        if expected_version_id is not None and str(label.version_id) != str(expected_version_id):
            raise _conflict(name, label.version_id)
        check_label_unlocked(label, prompt=prompt, action=kind)
        undo, redo = _stacks(label)
        stack = undo if kind == MoveKind.UNDO else redo
        # Undoing the label's creation would leave it pointing nowhere.
        if not stack or stack[-1].from_version_id is None:
            code = "nothing_to_undo" if kind == MoveKind.UNDO else "nothing_to_redo"
            raise DomainError(f"Nothing to {kind} for label {name!r}.", code=code, field="name")
        top = stack[-1]
        current = label.version_id
        label.version_id, label.split = top.from_version_id, None
        label.save(update_fields=["version", "split", "updated_at"])
        _record(label=label, kind=kind, from_id=current, to_id=top.from_version_id, actor=actor, reverts=top)
        _audit_label(prompt=prompt, name=name, kind=kind, from_id=current, to_id=top.from_version_id,
                     actor=actor)
    return label


def label_undo(*, prompt: Prompt, name: str, actor, expected_version_id=None) -> Label:
    """Move the label back to where its last move (or redo) found it."""
    return _step(prompt=prompt, name=name, actor=actor, expected_version_id=expected_version_id,
                 kind=MoveKind.UNDO)


def label_redo(*, prompt: Prompt, name: str, actor, expected_version_id=None) -> Label:
    """Re-apply the last undone move."""
    return _step(prompt=prompt, name=name, actor=actor, expected_version_id=expected_version_id,
                 kind=MoveKind.REDO)
