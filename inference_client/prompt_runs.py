"""Run a saved prompt version by reference:

    POST /api/prompts/<id>/versions/<vid>/run
    POST /api/prompts/<id>/labels/<label>/run      {"variables": {...}, "stream": false}

The version's frozen model and parameters apply (playground.calls.builder builds the
request); the call then takes the same path as /v1/chat/completions
(completion_create: idempotency, cache, admission, usage), and answers in the
same shape: a chat.completion object, or OpenAI SSE chunks when `stream` is
true. `x-prompt-version` says which version ran (a label may have moved).
"""

from __future__ import annotations

from django.views.decorators.csrf import csrf_exempt

from core.error_codes import DomainError
from core.errors import domain_error_response, json_error
from inference_client.idempotency import body_fingerprint, check_idempotency_key
from inference_client.request_params import check_body_size, parse_json
from inference_client.services import completion_create
from inference_client.stages.request import authenticate
from inference_client.threads import run_db
from inference_client.validation import check_chat_request
from inference_client.views import completion_response
from playground.calls.builder import run_prepare
from sharing.access import SHARE_TOKEN_HEADER, client_address


async def _run(request, *, prompt_id, version_id=None, label=None):
    if request.method != "POST":
        return json_error("method_not_allowed", "Use POST to run a prompt.")
    try:
        caller = await authenticate(request)
        user = caller.user  # a key acts for its owner
        check_body_size(int(request.META.get("CONTENT_LENGTH") or 0))
        raw = request.read()
        data = parse_json(raw) if raw.strip() else {}
        prepared = await run_db(run_prepare, user=user, prompt_id=prompt_id, data=data,
                                version_id=version_id, label=label,
                                share_token=request.headers.get(SHARE_TOKEN_HEADER),
                                client_addr=client_address(request))
        # The same checks as /v1: a saved version is held to the gateway's limits too.
        end_user = {"user": prepared.user} if prepared.user is not None else {}
        chat = check_chat_request({**prepared.chat_body, "stream": prepared.stream, **end_user})
        idempotency_key = check_idempotency_key(request.headers.get("Idempotency-Key"))
        fingerprint = body_fingerprint({**prepared.chat_body, "stream": prepared.stream,
                                        "version": str(prepared.version.pk)}) if idempotency_key else None
        completion = await completion_create(
            api_key_or_user=caller, model=chat.model, messages=chat.messages, params=chat.params,
            stream=chat.stream, idempotency_key=idempotency_key, fingerprint=fingerprint,
            prompt_ref={"version": str(prepared.version.pk), "label": prepared.label, "source": "run",
                        "checked": True, "variables": prepared.variables})
    except DomainError as exc:
        return domain_error_response(exc)
    return await completion_response(completion, stream=chat.stream, model=chat.model, headers={
        "x-prompt-version": str(prepared.version.pk),
        "x-prompt-version-number": str(prepared.version.number)})


@csrf_exempt  # authenticate checks CSRF for session calls itself
async def version_run(request, prompt_id, version_id):
    return await _run(request, prompt_id=prompt_id, version_id=version_id)


@csrf_exempt
async def label_run(request, prompt_id, name):
    return await _run(request, prompt_id=prompt_id, label=name)
