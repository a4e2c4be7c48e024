"""core.redis.run_script on a real Redis: the script calls of one turn of the event
loop go in one pipeline, each gets its own reply or error, and a script Redis
forgot (a restart) is loaded again."""

import asyncio
import uuid

import pytest
import redis

from core import redis as core_redis

pytestmark = pytest.mark.needs_services

INCR = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
FAILS_ON_NEGATIVE = "if tonumber(ARGV[1]) < 0 then return redis.error_reply('negative') end return ARGV[1]"


def test_calls_of_one_turn_share_a_pipeline_and_each_gets_its_reply(monkeypatch):
    key = f"turn:{uuid.uuid4().hex}"
    pipelines = []

    async def scenario():
        client = core_redis.get_aredis()
        real = client.pipeline

        def recording(*args, **kwargs):
            pipe = real(*args, **kwargs)
            pipelines.append(pipe)
            return pipe
        monkeypatch.setattr(client, "pipeline", recording)
        together = await asyncio.gather(*(core_redis.run_script(INCR, [key], [i]) for i in range(1, 6)))
        alone = await core_redis.run_script(INCR, [key], [100])
        await client.delete(key)
        return together, alone

    together, alone = asyncio.run(scenario())
    assert together == [1, 3, 6, 10, 15] and alone == 115  # in call order
    assert len(pipelines) == 2  # one per turn


def test_an_error_fails_only_its_own_call_and_an_unknown_script_is_loaded():
    # A script Redis has never seen (as after a restart): EVALSHA answers NOSCRIPT.
    source = f"-- {uuid.uuid4().hex}\n{FAILS_ON_NEGATIVE}"

    async def scenario():
        return await asyncio.gather(core_redis.run_script(source, [], [2]),
                                    core_redis.run_script(source, [], [-1]),
                                    core_redis.run_script(source, [], [3]),
                                    return_exceptions=True)

    first, failed, last = asyncio.run(scenario())
    assert (first, last) == (b"2", b"3")
    assert isinstance(failed, redis.exceptions.ResponseError) and "negative" in str(failed)
