"""chat.send.RULES through every executor: the same answer, the same nothing stored."""

import pytest
from channels.db import database_sync_to_async as db

from chat import realtime, send, services
from chat.models import InboxEntry, Message
from core import adb
from core.error_codes import DomainError

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def _executors():
    out = [("sync", db(send.run_sync))]
    if adb.enabled():
        out.append(("async", send.run_async))
    return out


async def _answer(run, **args):
    try:
        msg, created, _ = await run(**args)
    except DomainError as exc:
        return exc.code
    return "created" if created else "duplicate"


async def test_should_give_every_rule_the_same_answer_on_every_executor(pair, carol, settings):
    (alice, _), (bob, _) = pair
    carol_user, _ = carol
    dave = await db(lambda: type(alice).objects.create(username="dave"))()
    await db(services.block_create)(blocker=carol_user, blocked_id=alice.pk)
    await db(services.block_create)(blocker=alice, blocked_id=dave.pk)
    await db(services.message_send)(sender=alice, recipient_id=bob.pk, client_msg_id="one", body="hi")

    def case(recipient, cid):
        return {"sender_id": alice.pk, "recipient_id": recipient, "client_msg_id": cid, "body": "b"}

    cases = {  # rule -> (the send, its answer)
        "fresh": (case(bob.pk, "one"), "duplicate"),
        "recipient_found": (case(999_999, "x1"), "user_not_found"),
        "not_blocked": (case(carol_user.pk, "x2"), "blocked"),
        "not_blocking": (case(dave.pk, "x3"), "you_blocked"),
    }
    assert set(cases) | {"rate_ok"} == {r.name for r in send.RULES}  # a new rule needs a case here
    for name, run in _executors():
        for rule, (args, want) in cases.items():
            assert await _answer(run, **args) == want, (name, rule)
        # A retry of an accepted send into another conversation is refused, not answered.
        assert await _answer(run, **case(carol_user.pk, "one")) == "client_msg_id_reused", name
    # The last rule: an empty bucket refuses, and refusals above cost no token.
    settings.CHAT_SEND_BURST, settings.CHAT_SEND_RATE = 1, 0.001
    for name, run in _executors():
        await db(realtime.state().take_send_token)(alice.pk, cost=-1)  # a token for this executor
        assert await _answer(run, **case(999_999, f"{name}-ghost")) == "user_not_found"
        assert await _answer(run, **case(bob.pk, f"{name}-a")) == "created", name
        assert await _answer(run, **case(bob.pk, f"{name}-b")) == "rate_limit_exceeded", name
        assert await _answer(run, **case(bob.pk, f"{name}-a")) == "duplicate", name  # no token needed
    stored = await db(lambda: list(Message.objects.order_by("seq").values_list("client_msg_id", "seq")))()
    assert stored == [("one", 1)] + [(f"{name}-a", i + 2) for i, (name, _) in enumerate(_executors())]
    assert await db(InboxEntry.objects.count)() == len(stored)
