"""The cancel watcher's pub/sub connection survives a quiet channel."""

import logging
import queue
import time

import pytest
import redis
from django.conf import settings

from inference_protocol.events import RedisEventLog

pytestmark = pytest.mark.needs_services


def test_a_cancel_after_a_quiet_spell_longer_than_the_socket_timeout_still_arrives(caplog):
    # A short socket timeout stands for the clients' 10 s one: listen() on a quiet
    # channel used to raise a timeout, log a lost connection and resubscribe a
    # second later, dropping the notices sent meanwhile.
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.3)
    log = RedisEventLog(client)
    seen: queue.Queue = queue.Queue()
    log.watch_cancels(seen.put)
    deadline = time.monotonic() + 5
    while not client.pubsub_numsub("gen:cancel")[0][1]:  # subscribed
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with caplog.at_level(logging.WARNING, logger="inference_protocol.events"):
        time.sleep(1.0)  # the quiet spell itself (three socket timeouts), not a wait for an event
        log.cancel("quiet-then-cancelled")
        assert seen.get(timeout=5) == "quiet-then-cancelled"
    assert not [r for r in caplog.records if "lost Redis" in r.getMessage()]
