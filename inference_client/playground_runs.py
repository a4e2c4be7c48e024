"""The playground page's runs, recorded in its run history:

    POST /api/prompts/<id>/run   {"version", "system", "messages", "body", "variables", "model", ...}
    POST /api/playground/run     the same, for the caller's scratch draft (no prompt yet)

The server renders the texts with the variables and builds the request itself
(playground.runs.run_build), runs it on the path of /v1/chat/completions, and
answers in its shape. When the generation ends the run is stored exactly as it
was sent (playground.runs.run_record): a stream stores it before its finish
(or error) and `[DONE]` frames, so a page that saw the end finds the run in the list; a client
that goes away leaves the record to a task that waits for the end.
`x-playground-run` names the run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from django.views.decorators.csrf import csrf_exempt

from core.error_codes import DomainError
from core.errors import domain_error_response, json_error
from inference_client.completion import Completion, spawn
from inference_client.rendering import choices_of, sse
from inference_client.request_params import check_body_size, parse_json
from inference_client.services import completion_create
from inference_client.stages.request import authenticate
from inference_client.threads import run_db
from inference_client.validation import check_chat_request
from inference_client.views import completion_response
from inference_protocol import tools
from playground.runs import BuiltRun, run_build, run_record

logger = logging.getLogger(__name__)


async def _output(completion: Completion, terminal: dict) -> str:
    """The whole text of a finished generation; what had streamed of one that did not finish."""
    if terminal["type"] == "done":
        return choices_of(terminal["result"])[0]["text"]
    parts = [e["text"] async for e in completion.events() if e["type"] == "token" and e.get("index", 0) == 0]
    return "".join(parts)


async def _store(completion: Completion, built: BuiltRun, run_id: uuid.UUID, user) -> None:
    """Record the run once its generation has ended; a failure here is logged, never the answer's."""
    try:
        await _write(completion, built, run_id, user)
    except Exception:
        logger.exception("storing playground run %s failed", run_id)


async def _write(completion: Completion, built: BuiltRun, run_id: uuid.UUID, user) -> None:
    terminal = await completion.final()
    result = terminal.get("result") if terminal["type"] == "done" else None
    failure = "" if result else terminal.get("code", "engine_error")
    text = await _output(completion, terminal)
    ended = completion.ended_at or completion.started
    await _record(built, run_id, user,
                  output=text, tool_calls=tools.parse_calls(text) if built.chat_body.get("tools") else None,
                  status="ok" if result else ("cancelled" if failure == "cancelled" else "error"),
                  error_code=failure,
                  prompt_tokens=result["prompt_tokens"] if result else 0,
                  completion_tokens=result["completion_tokens"] if result else 0,
                  latency_ms=int((ended - completion.started) * 1000),
                  ttft_ms=int(completion.ttft_s * 1000) if completion.ttft_s is not None else None,
                  request_id=completion.request_id)


async def _record(built: BuiltRun, run_id: uuid.UUID, user, **outcome) -> None:
    """Store the run as `built` sent it, with how it ended."""
    await run_db(run_record, run_id=run_id, prompt=built.prompt, user=user, version=built.version,
                 draft=built.draft, variables=built.variables, params=built.chat_body, **outcome)


async def _stored_before_done(completion: Completion, stored: asyncio.Task):
    """The stream's frames, the finish, error and [DONE] frames only once the run is stored.
    The store runs as a task of its own from the start, so a client that goes away
    still gets its run stored when the generation ends."""
    async for chunk in sse(completion):
        if completion.ended_at is not None and not stored.done():
            await asyncio.shield(stored)
        yield chunk


@csrf_exempt  # authenticate checks CSRF for session calls itself
async def playground_run(request, prompt_id=None):
    if request.method != "POST":
        return json_error("method_not_allowed", "Use POST to run a prompt.")
    built = None
    run_id = uuid.uuid4()
    try:
        caller = await authenticate(request)
        check_body_size(int(request.META.get("CONTENT_LENGTH") or 0))
        raw = request.read()
        data = parse_json(raw) if raw.strip() else {}
        built = await run_db(run_build, user=caller.user, prompt_id=prompt_id, data=data)
        body = {**built.chat_body, "stream": built.stream}
        if built.stream:
            body["stream_options"] = {"include_usage": True}
        chat = check_chat_request(body)
        saved = built.version is not None and built.draft is None
        # Logged in the run history, not in the generations log (inference_client.generation_log).
        ref = {"version": str(built.version.pk), "source": "playground"} if saved else None
        completion = await completion_create(api_key_or_user=caller, model=chat.model, messages=chat.messages,
                                             params=chat.params, stream=chat.stream, prompt_ref=ref)
    except DomainError as exc:
        if built is not None:  # refused on the way (a limit, an unknown model): a run that failed
            await _record(built, run_id, caller.user, output="", tool_calls=None, status="error",
                          error_code=exc.code)
        response = domain_error_response(exc)
        if built is not None:
            response["x-playground-run"] = str(run_id)
        return response

    def store():
        return _store(completion, built, run_id, caller.user)

    headers = {"x-playground-run": str(run_id)}
    if not chat.stream:
        await store()
        return await completion_response(completion, stream=False, model=chat.model, headers=headers)
    return await completion_response(completion, stream=True, model=chat.model, headers=headers,
                                     chunks=_stored_before_done(completion, spawn(store())))
