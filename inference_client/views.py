"""/v1: OpenAI-compatible chat completions and models, usage, and /metrics.

chat_completions is an async view: a request waits for its generation on the
event loop, not on one of the few threads Django runs sync views on.
"""

from __future__ import annotations

import asyncio
import time

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from core.error_codes import DomainError
from core.errors import domain_error_response, json_error
from core.monitoring import monitoring_allowed
from inference_client import metrics as m
from inference_client import selectors
from inference_client.refusals import remember_refusal
from inference_client.rendering import completion_body, embeddings_body, error_status, sse
from inference_client.request_params import check_body_size, parse_json
from inference_client.services import completion_create
from inference_client.stages.request import authenticate, parse_body, parse_headers
from inference_client.validation import (
    check_chat_request,
    check_embeddings_request,
    check_text_request,
)
from inference_protocol import config


def _count(model: str | None, status: int) -> None:
    label = model if model in config.current().models else "unknown"
    m.REQUESTS.labels(label, str(status)).inc()


@csrf_exempt
async def chat_completions(request):
    return await _generate(request, check_chat_request, kind="chat", path="/v1/chat/completions")


@csrf_exempt
async def completions(request):
    """The legacy prompt form (raw text, no chat template)."""
    return await _generate(request, check_text_request, kind="text", path="/v1/completions")


@csrf_exempt
async def embeddings(request):
    """Vectors for one input or a batch, through the same admission and scheduler."""
    if request.method != "POST":
        return json_error("method_not_allowed", "Use POST for /v1/embeddings.")
    model = api_key = None
    try:
        api_key = await authenticate(request)
        check_body_size(int(request.META.get("CONTENT_LENGTH") or 0))
        embed = check_embeddings_request(parse_json(request.read()))
        model = embed.model
        completion = await completion_create(api_key_or_user=api_key, model=model, messages=embed.messages,
                                             params=embed.params, kind="embed")
    except DomainError as exc:
        _count(model, exc.status)
        remember_refusal(request, exc, getattr(api_key, "tier", ""))
        return domain_error_response(exc)
    headers = {**completion.headers, "x-request-id": completion.request_id}
    try:
        terminal = await completion.final()
    except asyncio.CancelledError:
        await completion.client_gone()
        raise
    if terminal["type"] != "done":
        status, error = error_status(terminal)
        if error["error"]["param"] == "messages":
            error["error"]["param"] = error["error"]["field"] = "input"
        _count(model, status)
        return JsonResponse(error, status=status, headers=headers)
    _count(model, 200)
    body = embeddings_body(completion, terminal["result"], embed.encoding_format)
    return JsonResponse(body, headers=headers)


async def _generate(request, check, *, kind: str, path: str):
    if request.method != "POST":
        return json_error("method_not_allowed", f"Use POST for {path}.")
    model = caller = None
    started = time.perf_counter()
    try:
        caller = await authenticate(request)
        authenticated = time.perf_counter()
        body, chat = parse_body(request, check)
        model = chat.model
        headers = parse_headers(request, body, kind)
        parsed = time.perf_counter()
        completion = await completion_create(
            api_key_or_user=caller, model=chat.model, messages=chat.messages, params=chat.params,
            stream=chat.stream, idempotency_key=headers.idempotency_key, kind=kind,
            fingerprint=headers.fingerprint, prompt_ref=headers.prompt_ref)
    except DomainError as exc:
        _count(model, exc.status)
        remember_refusal(request, exc, getattr(caller, "tier", ""))
        return domain_error_response(exc)
    completion.timings = {"authenticate": (authenticated - started) * 1000,
                          "parse": (parsed - authenticated) * 1000, **completion.timings}
    return await completion_response(completion, stream=chat.stream, model=model, started=started)


async def completion_response(completion, *, stream: bool, model: str, headers: dict | None = None,
                              started: float | None = None, chunks=None):
    """The HTTP response of a started completion: SSE chunks, or the
    chat.completion object once it ends (shared with saved-prompt runs).
    ``started`` (perf_counter at the view's start) adds the total to Server-Timing;
    ``chunks``: the stream's frames when the caller wraps ``sse(completion)``."""
    headers = {**completion.headers, "x-request-id": completion.request_id,
               "x-cache": completion.cache_hit or "miss", **(headers or {})}
    if stream:
        _count(model, 200)
        return StreamingHttpResponse(chunks or sse(completion), content_type="text/event-stream",
                                     headers={**headers, "Cache-Control": "no-cache",
                                              "X-Accel-Buffering": "no"})
    try:
        terminal = await completion.final()
    except asyncio.CancelledError:  # the client went away while waiting
        await completion.client_gone()
        raise
    timing = completion.server_timing(terminal.get("result"))
    if started is not None:
        timing += f", total;dur={(time.perf_counter() - started) * 1000:.2f}"
    headers["Server-Timing"] = timing.lstrip(", ")
    if terminal["type"] == "done":
        _count(model, 200)
        return JsonResponse(completion_body(completion, terminal["result"]), headers=headers)
    status, error = error_status(terminal)
    _count(model, status)
    return JsonResponse(error, status=status, headers=headers)


class ModelListApi(APIView):
    @extend_schema(operation_id="v1_models_list", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response({"object": "list", "data": selectors.model_list()})


class ModelDetailApi(APIView):
    @extend_schema(operation_id="v1_models_retrieve", responses=OpenApiTypes.OBJECT)
    def get(self, request, model: str):
        for entry in selectors.model_list():
            if entry["id"] == model:
                return Response(entry)
        raise DomainError(f"The model '{model}' does not exist.", code="model_not_found",
                          field="model")


class UsageApi(APIView):
    """The signed-in user's (or key owner's) usage records, newest first, with totals."""

    @extend_schema(operation_id="v1_usage_retrieve", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        model = request.query_params.get("model") or None
        try:
            limit = min(max(int(request.query_params.get("limit", 50)), 1), 500)
        except ValueError:
            raise DomainError("'limit' must be an integer.", code="invalid_value", field="limit") from None
        rows = selectors.usage_list(user=request.user, model=model)[:limit]
        data = [{"request_id": r.request_id, "model": r.model,
                 "api_key": r.api_key.prefix if r.api_key else None,
                 "tier": r.tier, "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                 "latency_ms": r.latency_ms, "ttft_ms": r.ttft_ms, "cache_hit": r.cache_hit or None,
                 "status": r.status, "error_code": r.error_code or None,
                 "prompt_version": str(r.prompt_version) if r.prompt_version else None,
                 "prompt_label": r.prompt_label or None,
                 "created_at": r.created_at.isoformat()} for r in rows]
        out = {"object": "list", "summary": selectors.usage_summary(user=request.user, model=model),
               "data": data}
        if request.query_params.get("group_by") == "prompt_version":
            out["by_prompt_version"] = selectors.usage_by_prompt_version(
                user=request.user, label=request.query_params.get("prompt_label") or None)
        elif request.query_params.get("group_by"):
            raise DomainError("group_by can only be 'prompt_version'.", code="invalid_value",
                              field="group_by")
        return Response(out)


def metrics_view(request):
    if not monitoring_allowed(request):  # worker hosts, pids, models: for the operators only
        return json_error("unauthorized", "Send 'Authorization: Bearer <METRICS_TOKEN>' "
                          "(or sign in as staff).", headers={"WWW-Authenticate": "Bearer"})
    body, content_type = m.render()
    return HttpResponse(body, content_type=content_type)
