"""Publishing config documents: validate, number, sign, store, broadcast.

config_publish: the content is checked first (every problem named, nothing
signed when one is found), then numbered after the newest document (its parent),
signed with CONFIG_SIGNING_KEY, stored immutable, audited, and after the commit
broadcast (inference_protocol.config.broadcast) and applied in this process.
config_rollback publishes the parent's content (N-1) as N+1.
"""

from __future__ import annotations

import copy
import datetime
import json
import logging
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from core.commit import after_commit
from core.redis import enabled as redis_enabled
from core.redis import get_redis
from inference_client.models import ConfigDocumentRecord, ControlEvent, ModelVersion
from inference_protocol import config
from inference_protocol.config_document import ConfigDocument, ConfigError, check_content
from inference_protocol.config_floor import Floor

logger = logging.getLogger("inference.config")


class ConfigConflict(Exception):
    """Someone else published first (a rollback expects the document it undoes)."""


def _published(model: str, version: str) -> bool:
    return ModelVersion.objects.filter(model=model, version=version).exists()


def config_check(content: dict) -> list[str]:
    """Every problem of ``content`` as the control plane sees it (versions must
    be published)."""
    return check_content(content, published=_published)


def latest_document() -> ConfigDocumentRecord | None:
    return ConfigDocumentRecord.objects.order_by("-number").first()


class PublishedFloor:
    """The control plane's config floor (inference_protocol.config_floor): its newest
    published document, in the database, which no Redis replay can lower."""

    def read(self) -> Floor | None:
        # On a thread of its own, which closes its connection: the first offer may come
        # from the config watcher's thread (which would keep one open) or an event loop.
        with ThreadPoolExecutor(1, thread_name_prefix="config-floor") as pool:
            return pool.submit(self._read).result()

    @staticmethod
    def _read() -> Floor | None:
        try:
            latest = latest_document()
            return Floor(latest.number, latest.digest) if latest else None
        finally:
            connection.close()

    def raise_to(self, floor: Floor) -> None:
        pass  # the published record is the floor already


def document_content(number: int) -> dict:
    """The content of document ``number`` (0: the bootstrap, this process's settings)."""
    if number == 0:
        return config.bootstrap_content(settings)
    return ConfigDocumentRecord.objects.get(number=number).content


def current_content() -> dict:
    latest = latest_document()
    return copy.deepcopy(latest.content) if latest else config.bootstrap_content(settings)


def config_publish(*, content: dict, actor: str, reason: str = "", action: str = "config_publish",
                   detail: dict | None = None, expect_parent: int | None = None) -> ConfigDocumentRecord:
    """Publish ``content`` as the next document. ConfigError (every problem
    named) when it is invalid or no signing key is configured; ``expect_parent``:
    refuse (ConfigConflict) if the newest document is not that one."""
    problems = config_check(content)
    if not settings.CONFIG_SIGNING_KEY:
        problems.append("this process has no CONFIG_SIGNING_KEY: only the control plane signs documents")
    if problems:
        raise ConfigError(problems)
    for _attempt in range(5):
        try:
            with transaction.atomic():
                latest = ConfigDocumentRecord.objects.select_for_update().order_by("-number").first()
                parent = latest.number if latest else 0
                if expect_parent is not None and parent != expect_parent:
                    raise ConfigConflict(f"document {parent} was published meanwhile "
                                         f"(expected {expect_parent})")
                doc = ConfigDocument(
                    number=parent + 1, parent=parent, content=content,
                    created_at=datetime.datetime.now(datetime.UTC).isoformat(), created_by=actor,
                    reason=reason).signed(settings.CONFIG_SIGNING_KEY)
                record = ConfigDocumentRecord.objects.create(
                    number=doc.number, parent=parent, content=content,
                    digest=config.ConfigSnapshot.of(doc.number, parent, content).digest,
                    document=doc.to_json().decode(), created_by=actor, reason=reason,
                    created_at=datetime.datetime.fromisoformat(doc.created_at))
                ControlEvent.objects.create(action=action, target=f"config:{doc.number}", actor_name=actor,
                                            detail={"reason": reason, "parent": parent, **(detail or {})})
                after_commit(config_broadcast, doc)
                return record
        except IntegrityError:  # another publisher took this number (no row to lock yet)
            continue
    raise ConfigConflict("could not number the document: too many concurrent publishers")


def config_broadcast(doc: ConfigDocument) -> None:
    """To every gateway and worker (Redis), and to this process."""
    if redis_enabled():
        try:
            config.broadcast(get_redis(), doc)
        except Exception as exc:  # stored: nodes get it by the poll once Redis is back
            logger.warning("config document %s stored but not broadcast: %s", doc.number, exc)
    config.state().offer(doc)


def config_rebroadcast() -> None:
    """Send the newest stored document again (after a Redis flush or outage)."""
    latest = latest_document()
    if latest is not None:
        config_broadcast(ConfigDocument.from_json(latest.document))


def config_rollback(*, actor: str, reason: str = "") -> ConfigDocumentRecord:
    """Publish the content of the newest document's parent (N-1) as N+1."""
    latest = latest_document()
    if latest is None:
        raise ConfigError(["nothing to roll back: no document was published (document 0 is current)"])
    previous = document_content(latest.parent or 0)
    return config_publish(content=previous, actor=actor, action="config_rollback",
                          reason=reason or f"rollback of {latest.number} to {latest.parent}'s content",
                          detail={"rolled_back": latest.number, "content_of": latest.parent or 0},
                          expect_parent=latest.number)


def content_with(base: dict, assignments: list[str]) -> dict:
    """``base`` with dotted-path assignments applied: ``rate_limits.free.requests_per_min=5``
    (the value is JSON, or a string when it is not JSON)."""
    content = copy.deepcopy(base)
    for item in assignments:
        path, sep, raw = item.partition("=")
        if not sep or not path:
            raise ConfigError([f"{item!r}: expected PATH=VALUE"])
        set_path(content, path, raw)
    return content


def content_diff(old: dict, new: dict, prefix: str = "") -> list[dict]:
    """Leaf changes between two contents: [{path, old, new}] (absent: None)."""
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        path = f"{prefix}{key}"
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            changes += content_diff(a, b, path + ".")
        elif a != b:
            changes.append({"path": path, "old": a, "new": b})
    return changes


def set_path(content: dict, path: str, raw: str) -> None:
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    *parents, last = path.split(".")
    node = content
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    if value is None:
        node.pop(last, None)  # PATH=null removes the key
    else:
        node[last] = value
