"""A chat send: its rules stated once (RULES), run by two executors.

- `run_async`: the websocket on PostgreSQL, on the caller's event loop: one
  statement (one transaction) through core.adb, no worker thread.
- `run_sync`: everything else (REST, SQLite, the websocket on SQLite). On
  PostgreSQL it sends the very same statement through Django's connection; on
  SQLite (no writes inside WITH) it reads the same checks, then writes.

Both take the rate token first and give it back when nothing was stored, let the
database evaluate every rule's condition (so storing and answering cannot
disagree), store only if all hold, and answer with `_outcome`, which walks RULES
in order: a rule added here reaches every path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from core import adb
from core.error_codes import DomainError

from . import realtime
from .models import Block, ChatProfile, Conversation, InboxEntry, Message

User = get_user_model()


@dataclass(frozen=True)
class Rule:
    name: str  # also the column the statement returns for it
    sql: str  # true when the send may go ahead
    error: Callable[[dict], DomainError] | None  # None: the duplicate rule (answered, not refused)


def _unknown(p):
    return DomainError(f"No user with id {p['recipient']}.", code="user_not_found", field="to")


def _blocked(p):
    return DomainError("This user does not accept messages from you.", code="blocked",
                       field="to")


def _you_blocked(p):
    return DomainError("You blocked this user; unblock them to send.", code="you_blocked",
                       field="to")


def rate_limited(retry: float) -> DomainError:
    return DomainError(f"Send rate limit reached: {settings.CHAT_SEND_RATE:g} messages/s, bursts of "
                       f"{settings.CHAT_SEND_BURST} (CHAT_SEND_RATE). Retry in {retry:.1f}s.",
                       code="rate_limit_exceeded",
                       extra={"limit": "CHAT_SEND_RATE", "retry_after": round(retry, 3)},
                       headers={"Retry-After": str(max(1, round(retry)))})


# In order: the first that fails answers. A retry of an accepted send is answered
# before anything else (idempotent, whatever changed since).
RULES = (
    Rule("fresh", "NOT EXISTS (SELECT 1 FROM dup)", None),
    Rule("recipient_found", "peer.id IS NOT NULL", _unknown),
    Rule("not_blocked", "NOT coalesce(peer.blocks_sender, false)", _blocked),
    Rule("not_blocking", "NOT coalesce(peer.blocked_by_sender, false)", _you_blocked),
    Rule("rate_ok", "%(allowed)s", lambda p: rate_limited(p["retry"])),
)


def _tables() -> dict:
    return {"user": User._meta.db_table, "block": Block._meta.db_table, "conv": Conversation._meta.db_table,
            "profile": ChatProfile._meta.db_table, "msg": Message._meta.db_table,
            "inbox": InboxEntry._meta.db_table}


_DUP_COLUMNS = ("dup.id, dup.conversation_id, dup.seq, dup.created_at, dup.body, dup.edited_at,"
                " dup.deleted_at, dup.version, dup.user_low_id, dup.user_high_id")


def _checks_sql(t: dict) -> str:
    """The CTEs every executor reads: the retry lookup, the recipient with both
    block directions, and one boolean column per rule."""
    columns = ", ".join(f"({r.sql}) AS {r.name}" for r in RULES)
    return f"""
    dup AS (
        SELECT m.id, m.conversation_id, m.seq, m.created_at, m.body, m.edited_at, m.deleted_at, m.version,
            c.user_low_id, c.user_high_id
        FROM {t["msg"]} m JOIN {t["conv"]} c ON c.id = m.conversation_id
        WHERE m.sender_id = %(sender)s AND m.client_msg_id = %(cid)s
    ), peer AS (
        SELECT u.id,
            EXISTS (SELECT 1 FROM {t["block"]} b WHERE b.blocker_id = u.id AND b.blocked_id = %(sender)s)
                AS blocks_sender,
            EXISTS (SELECT 1 FROM {t["block"]} b WHERE b.blocker_id = %(sender)s AND b.blocked_id = u.id)
                AS blocked_by_sender
        FROM {t["user"]} u WHERE u.id = %(recipient)s AND u.is_active
    ), checks AS (
        SELECT {columns} FROM (SELECT 1) AS one LEFT JOIN peer ON true
    )"""


def _all_pass() -> str:
    return " AND ".join(f"checks.{r.name}" for r in RULES)


def _statement_sql() -> str:
    """The whole send in one PostgreSQL statement: the checks, then, only if all
    hold, the two counter upserts, the message and the inbox entry. `box` reads
    from `conv`, so the lock order is conversation, then recipient profile."""
    t = _tables()
    rules = ", ".join(f"checks.{r.name}" for r in RULES)
    return f"""
    WITH {_checks_sql(t)}, go AS (
        SELECT 1 FROM checks WHERE {_all_pass()}
    ), conv AS (
        INSERT INTO {t["conv"]} (user_low_id, user_high_id, last_seq, created_at, last_message_at)
        SELECT %(low)s, %(high)s, 1, %(now)s, %(now)s FROM go
        ON CONFLICT (user_low_id, user_high_id) DO UPDATE
        SET last_seq = {t["conv"]}.last_seq + 1, last_message_at = EXCLUDED.last_message_at
        RETURNING id, last_seq
    ), box AS (
        INSERT INTO {t["profile"]} (user_id, inbox_seq) SELECT %(recipient)s, 1 FROM conv
        ON CONFLICT (user_id) DO UPDATE SET inbox_seq = {t["profile"]}.inbox_seq + 1
        RETURNING inbox_seq
    ), msg AS (
        INSERT INTO {t["msg"]} (conversation_id, seq, sender_id, client_msg_id, body, created_at)
        SELECT id, last_seq, %(sender)s, %(cid)s, %(body)s, %(now)s FROM conv
        RETURNING id, conversation_id, seq
    ), entry AS (
        INSERT INTO {t["inbox"]} (user_id, message_id, conversation_id, seq, inbox_seq)
        SELECT %(recipient)s, msg.id, msg.conversation_id, msg.seq, box.inbox_seq FROM msg, box
        RETURNING inbox_seq
    )
    SELECT {rules}, {_DUP_COLUMNS}, msg.id, msg.conversation_id, msg.seq, entry.inbox_seq
    FROM checks LEFT JOIN dup ON true LEFT JOIN msg ON true LEFT JOIN entry ON true
    """


def _checks_only_sql() -> str:
    rules = ", ".join(f"checks.{r.name}" for r in RULES)
    return f"WITH {_checks_sql(_tables())} SELECT {rules}, {_DUP_COLUMNS} FROM checks LEFT JOIN dup ON true"


# The steps of the statement above, one at a time (SQLite). Same counters, same order.
_NEXT_SEQ_SQL = """
    INSERT INTO chat_conversation (user_low_id, user_high_id, last_seq, created_at, last_message_at)
    VALUES (%s, %s, 1, %s, %s)
    ON CONFLICT (user_low_id, user_high_id) DO UPDATE
    SET last_seq = chat_conversation.last_seq + 1, last_message_at = EXCLUDED.last_message_at
    RETURNING id, last_seq
"""
_NEXT_INBOX_SEQ_SQL = """
    INSERT INTO chat_chatprofile (user_id, inbox_seq) VALUES (%s, 1)
    ON CONFLICT (user_id) DO UPDATE SET inbox_seq = chat_chatprofile.inbox_seq + 1
    RETURNING inbox_seq
"""



def _insert_sql() -> str:
    return (f"INSERT INTO {Message._meta.db_table} (conversation_id, seq, sender_id, client_msg_id, body,"
            " created_at) VALUES (%s, %s, %s, %s, %s, %s) RETURNING id")


def _entry_sql() -> str:
    return (f"INSERT INTO {InboxEntry._meta.db_table} (user_id, message_id, conversation_id, seq, inbox_seq)"
            " VALUES (%s, %s, %s, %s, %s)")


def next_inbox_seq(user_id: int) -> int:
    """The user's next inbox number, under their profile's row lock until commit."""
    with connection.cursor() as cursor:
        cursor.execute(_NEXT_INBOX_SEQ_SQL, [user_id])
        return cursor.fetchone()[0]


_sql: dict[str, str] = {}


def _cached(name: str, build) -> str:
    if name not in _sql:
        _sql[name] = build()
    return _sql[name]


def _aware(value) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):  # SQLite hands raw SQL its text
        value = parse_datetime(value)
    return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)


def _params(*, sender_id: int, recipient_id: int, client_msg_id: str, body: str, allowed: bool,
            retry: float) -> dict:
    low, high = sorted((sender_id, recipient_id))
    return {"sender": sender_id, "recipient": recipient_id, "cid": client_msg_id, "body": body, "low": low,
            "high": high, "now": timezone.now(), "allowed": allowed, "retry": retry}


def _outcome(row: tuple, params: dict) -> tuple[Message, bool]:
    """(message, created) from a statement's row, or the first failing rule's error."""
    checks, rest = dict(zip((r.name for r in RULES), row, strict=False)), row[len(RULES):]
    dup, stored = rest[:10], rest[10:]
    for rule in RULES:
        if checks[rule.name]:
            continue
        if rule.error is not None:
            raise rule.error(params)
        dup_id, dup_conv, dup_seq, dup_at, dup_body, edited_at, deleted_at, version, low, high = dup
        if params["recipient"] not in (low, high):
            raise DomainError("This client_msg_id was already used for another conversation.",
                              code="client_msg_id_reused", field="client_msg_id")
        return Message(id=dup_id, conversation_id=dup_conv, seq=dup_seq, sender_id=params["sender"],
                       client_msg_id=params["cid"], body=dup_body, created_at=_aware(dup_at),
                       edited_at=_aware(edited_at), deleted_at=_aware(deleted_at), version=version), False
    msg_id, conv_id, seq, inbox_seq = stored
    msg = Message(id=msg_id, conversation_id=conv_id, seq=seq, sender_id=params["sender"],
                  client_msg_id=params["cid"], body=params["body"], created_at=params["now"])
    msg.inbox_seq = inbox_seq
    return msg, True


def _conflict() -> DomainError:
    return DomainError("The send could not be stored; retry it.", code="send_conflict")


async def run_async(*, sender_id: int, recipient_id: int, client_msg_id: str,
                    body: str) -> tuple[Message, bool, int]:
    """Returns (message, created, the sender's live connections); publishes nothing."""
    from psycopg.errors import UniqueViolation

    state = realtime.state()
    allowed, retry, conns = await state.take_send_token_async(sender_id)
    params = _params(sender_id=sender_id, recipient_id=recipient_id, client_msg_id=client_msg_id, body=body,
                     allowed=allowed, retry=retry)
    sql = _cached("statement", _statement_sql)
    for _ in range(2):
        try:
            row = await adb.fetchone(sql, params)
            break
        except UniqueViolation:
            # A concurrent retry with this client id won; ours rolled back (no gap):
            # the second run finds it.
            continue
    else:
        raise _conflict()
    if row[-1] is None and allowed:
        await state.take_send_token_async(sender_id, cost=-1)  # nothing stored: give the token back
    msg, created = _outcome(row, params)
    return msg, created, conns


def run_sync(*, sender_id: int, recipient_id: int, client_msg_id: str,
             body: str) -> tuple[Message, bool, int]:
    state = realtime.state()
    allowed, retry, conns = state.take_send_token(sender_id)
    params = _params(sender_id=sender_id, recipient_id=recipient_id, client_msg_id=client_msg_id, body=body,
                     allowed=allowed, retry=retry)
    for _ in range(2):
        try:
            row = _statement(params) if connection.vendor == "postgresql" else _steps(params)
            break
        except IntegrityError:
            continue  # as in run_async: a concurrent retry won; the second run finds it
    else:
        raise _conflict()
    if row[-1] is None and allowed:
        state.take_send_token(sender_id, cost=-1)
    msg, created = _outcome(row, params)
    return msg, created, conns


def _statement(params: dict) -> tuple:
    with transaction.atomic(), connection.cursor() as cursor:  # a savepoint when nested
        cursor.execute(_cached("statement", _statement_sql), params)
        return cursor.fetchone()


def _steps(params: dict) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(_cached("checks", _checks_only_sql), params)
        row = cursor.fetchone()
    if not all(row[:len(RULES)]):
        return (*row, None, None, None, None)
    p = params
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_NEXT_SEQ_SQL, [p["low"], p["high"], p["now"], p["now"]])
        conversation_id, seq = cursor.fetchone()
        inbox_seq = next_inbox_seq(p["recipient"])
        cursor.execute(_cached("insert", _insert_sql),
                       [conversation_id, seq, p["sender"], p["cid"], p["body"], p["now"]])
        (msg_id,) = cursor.fetchone()
        cursor.execute(_cached("entry", _entry_sql),
                       [p["recipient"], msg_id, conversation_id, seq, inbox_seq])
    return (*row, msg_id, conversation_id, seq, inbox_seq)
