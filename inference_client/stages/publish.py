"""The publish stage (the generation onto its queue) and the stream stage (its events back)."""

from __future__ import annotations

import secrets

from core.error_codes import DomainError
from inference_client.completion import Completion, read_events
from inference_client.stages.admit import release
from inference_client.stages.call import Call
from inference_client.stages.record import record
from inference_protocol.backend import get_backend
from inference_protocol.generation import GenerationRequest


async def publish(call: Call) -> None:
    """Send the generation to its model's queue; when
    the broker is away, nothing ran: a 503, the charge refunded, no usage record."""
    params = call.params
    generation = GenerationRequest(
        request_id=call.request_id, model=call.served, messages=call.messages, max_tokens=params.max_tokens,
        temperature=params.temperature, top_p=params.top_p, stop=list(params.stop),
        # Always seeded: a redelivered task must replay the same text.
        seed=params.seed if params.seed is not None else secrets.randbits(31),
        response_format=params.response_format or params.tool_constraint, n=params.n, inputs=params.inputs,
        logprobs=params.logprobs,
        raw_prompt=params.raw_prompt,
        priority=call.priority,
        timeout_s=call.timeout_s, stream=call.stream)
    try:
        await get_backend().asubmit(generation)
    except Exception as exc:
        if call.use_redis:
            await release(call, call.estimate)
        raise DomainError(f"The task queue is unavailable ({type(exc).__name__}: {exc}); try again shortly.",
                          code="queue_unavailable", headers={"Retry-After": "5"}) from exc


def stream(call: Call) -> Completion:
    """The generation's events, read from its log as the worker writes them;
    the record stage runs when the terminal one arrives."""
    completion = call.completion(headers=call.headers, timings=call.timings)
    # A batch line's id is stable: a resumed batch asks again for lines that may have ended.
    events = read_events(call.request_id, timeout_s=call.timeout_s + 5, attached=call.lane == "batch")
    return completion.start(events, on_end=lambda c, terminal: record(c, call, terminal))
