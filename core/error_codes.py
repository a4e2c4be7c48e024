"""Every error code the API sends (and those of the checkpoint and rollout
commands and heartbeats), in one place: its HTTP status, what it means,
and (for some) the message a raise site may leave out; and DomainError, the
exception that carries one (no HTTP here: core.errors maps it).

A code's status lives here, not at the raise site: `DomainError(code=...)` takes
it from this table, and a code missing from it fails when the error is made.
tests/test_error_codes.py checks that every literal code in the source is here
and every code here is used; docs/api.md's errors table is generated from it:

    python -m core.error_codes   # rewrites the table in docs/api.md
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ErrorCode:
    status: int
    description: str
    message: str = ""  # the default message (str.format with the error's extra); else the description


class UnknownErrorCode(LookupError):
    """A code that is not in CODES: add it there (with its status) first."""


E = ErrorCode
CODES: dict[str, ErrorCode] = {
    # --- request shape (any endpoint) ---
    "invalid_request": E(400, "The request is malformed; `field` names the part (DRF's `invalid`)."),
    "invalid_json": E(400, "The body is not the JSON object the endpoint reads."),
    "json_too_deep": E(400, "The JSON nests deeper than the server reads."),
    "parse_error": E(400, "The body does not parse."),
    "invalid_type": E(400, "A value has the wrong type."),
    "invalid_value": E(400, "A value is outside what the field accepts."),
    "invalid_unicode": E(400, "Text holds characters no encoder can write (a lone surrogate)."),
    "null_characters_not_allowed": E(400, "A value holds a NUL character, which no stored text can hold."),
    "integer_below_min_value": E(400, "An integer is below the field's minimum."),
    "integer_above_max_value": E(400, "An integer is above the field's maximum."),
    "out_of_range": E(400, "A number is outside the field's range."),
    "unknown_parameter": E(400, "The request names a parameter the endpoint does not know."),
    "missing_required_parameter": E(400, "A required parameter is missing."),
    "unsupported_parameter": E(400, "A parameter is known but not supported here (or by this model)."),
    "request_too_large": E(413, "The request body is over its byte limit (`limit` names the setting)."),
    # --- a serializer field's own checks (Django REST framework's codes; core.errors sends any
    # other DRF code as invalid_request) ---
    "required": E(400, "A required field is missing."),
    "null": E(400, "A field that takes no null is null."),
    "blank": E(400, "A text field that takes no empty text is empty."),
    "max_length": E(400, "A text or list is longer than the field allows."),
    "min_length": E(400, "A text or list is shorter than the field allows."),
    "max_value": E(400, "A number is above the field's maximum."),
    "min_value": E(400, "A number is below the field's minimum."),
    "max_string_length": E(400, "A number is written with too many characters."),
    "invalid_choice": E(400, "A value is not one of the field's choices."),
    "not_a_list": E(400, "A field that takes a list has something else."),
    "not_a_dict": E(400, "A field that takes an object has something else."),
    "empty": E(400, "A list or file that may not be empty is empty."),
    "does_not_exist": E(400, "A related object named by id does not exist."),
    "incorrect_type": E(400, "A related object's id has the wrong type."),
    "surrogate_characters_not_allowed": E(400, "Text holds a lone UTF-16 surrogate."),
    "date": E(400, "A date where the field takes a date and time."),
    "make_aware": E(400, "A time that does not exist in the server's time zone."),
    "overflow": E(400, "A date, time or number is outside what the field can hold."),
    "no_name": E(400, "An uploaded file has no name."),
    "not_found": E(404, "No such route or object."),
    "method_not_allowed": E(405, "The route does not take this HTTP method."),
    "not_acceptable": E(406, "No response format matches the Accept header."),
    "unsupported_media_type": E(415, "The body's content type is not one the endpoint reads."),
    "range_not_satisfiable": E(416, "The Range header is unsupported or outside the object."),
    "error": E(400, "A refusal DRF raised without a code of its own."),
    "server_error": E(500, "The server failed to handle the request (or a websocket frame).",
                      "The server failed to handle this request."),
    "database_unavailable": E(503, "The database is down; retry after `Retry-After`."),
    "cache_unavailable": E(503, "The cache (Redis) is down; retry after `Retry-After`."),
    "queue_unavailable": E(503, "The task queue is down; retry shortly."),
    "semantic_cache_unavailable": E(501, "SEMANTIC_CACHE_EMBEDDING_MODEL names no embedding model."),
    "server_shutting_down": E(503, "The server stopped before the generation ended (after its shutdown "
                                   "grace); retry: another server answers."),
    # --- authentication and permission ---
    "not_authenticated": E(401, "The request carries no credentials."),
    "authentication_failed": E(401, "The credentials are wrong."),
    "unauthorized": E(401, "/metrics needs METRICS_TOKEN as a Bearer token, or a staff session."),
    "missing_api_key": E(401, "/v1 needs 'Authorization: Bearer <key>'."),
    "malformed_api_key": E(401, "The Authorization header is not 'Bearer <api key>'."),
    "invalid_api_key": E(401, "No API key matches."),
    "revoked_api_key": E(401, "The API key was revoked."),
    "user_inactive": E(401, "The account is disabled."),
    "login_required": E(401, "The action needs a signed-in account."),
    "csrf_failed": E(403, "A session call without the CSRF token."),
    "permission_denied": E(403, "The account may not do this."),
    "forbidden": E(403, "The account may not do this to the object (read-only access, not its owner)."),
    "tier_not_allowed": E(403, "A key gets its account's tier; only staff change it."),
    "throttled": E(429, "Too many requests; retry after `Retry-After`."),
    "rate_limit_exceeded": E(429, "A rate limit is reached; retry after `Retry-After`."),
    "too_many_login_attempts": E(429, "Too many failed sign-ins from this address."),
    "too_many_signups": E(429, "Too many new accounts from this address."),
    "too_many_active_jobs": E(429, "The account has as many active jobs of this kind as it may."),
    # --- accounts and teams ---
    "username_required": E(400, "Sign-up without a username."),
    "username_taken": E(400, "The username is taken."),
    "weak_password": E(400, "The password fails the password rules."),
    "invalid_tier": E(400, "No such tier."),
    "owner_cannot_leave": E(400, "A team's owner cannot leave it.", "The owner cannot leave their team."),
    "team_not_found": E(404, "No such team."),
    "user_not_found": E(404, "No such user."),
    # --- prompts, versions, labels ---
    "prompt_not_found": E(404, "No such prompt, or the account cannot see it."),
    "version_not_found": E(404, "No such version (of this prompt, dataset or model).", "Version not found."),
    "version_required": E(400, "A column needs a version or a label."),
    "version_exists": E(409, "A version with this id already exists."),
    "version_unchanged": E(409, "A new version equal to its parent."),
    "parent_required": E(400, "A prompt with versions needs the parent the new version edits."),
    "parent_not_found": E(400, "The parent is not a version of this prompt."),
    "parent_cycle": E(400, "A version cannot be its own parent."),
    "empty_body": E(400, "A message or version body is empty."),
    "body_required": E(400, "Give exactly one of body or body_upload."),
    "body_not_utf8": E(400, "The uploaded body is not UTF-8."),
    "body_too_large": E(400, "The declared upload size is over PROMPT_BODY_MAX_BYTES."),
    "invalid_size": E(400, "The declared upload size is not positive."),
    "upload_invalid": E(400, "The upload handle is invalid, expired, or someone else's."),
    "upload_missing": E(400, "Nothing was uploaded for the handle."),
    "upload_size_mismatch": E(400, "The uploaded object's size differs from the declared one."),
    "upload_hash_mismatch": E(400, "The uploaded object's SHA-256 differs from the declared one."),
    "frozen_parameter": E(400, "A run cannot change a saved version's model or parameters."),
    "missing_variables": E(400, "The template needs variables the request lacks."),
    "unknown_variables": E(400, "The request gives variables the template does not use."),
    "invalid_variable_value": E(400, "A variable's value is not a string or a number."),
    "invalid_variable_name": E(400, "A variable name is not an identifier."),
    "model_not_found": E(404, "No such model (OpenAI's code; was `unknown_model` outside /v1)."),
    "model_not_supported": E(400, "The model does not serve this endpoint."),
    "model_unavailable": E(503, "No worker serves the model right now; retry after `Retry-After`."),
    "invalid_label_name": E(400, "Label names are 1-63 lowercase characters."),
    "invalid_branch_name": E(400, "Branch names are 1-63 lowercase characters ('/' allowed)."),
    "branch_exists": E(409, "A new branch named like one the prompt already has."),
    "label_not_found": E(404, "No such label on this prompt."),
    "label_conflict": E(409, "The label does not hold the expected version."),
    "label_protected": E(403, "A protected label only its owner may remove."),
    "approval_required": E(409, "The label needs a second editor's approval to move."),
    "second_editor_required": E(403, "The editor who requested a move cannot decide it."),
    "already_decided": E(409, "The pending move was already decided."),
    "pending_not_found": E(404, "No such pending move."),
    "nothing_to_undo": E(409, "The label has no move to undo."),
    "nothing_to_redo": E(409, "The label has no undone move to redo."),
    "merge_same_version": E(400, "A version cannot be merged with itself."),
    "merge_not_needed": E(400, "One version already contains the other."),
    "merge_no_common_ancestor": E(400, "The versions share no ancestor."),
    "invalid_split": E(400, "A traffic split's variants are malformed."),
    "invalid_weights": E(400, "A traffic split's weights do not add up."),
    "invalid_user_key": E(400, "The split's user key is not a short string."),
    "invalid_prompt_ref": E(400, "The X-Prompt-* headers do not name a prompt version."),
    "invalid_format": E(400, "An export or import format this server does not write or read."),
    "unsupported_format_version": E(400, "An import file's format_version is not one this server reads."),
    "import_body_hash_mismatch": E(400, "An imported version's body does not match its body_sha256."),
    "import_too_many_versions": E(400, "An import file holds more versions than PROMPT_IMPORT_MAX_VERSIONS."),
    "too_many_messages": E(400, "A version holds more messages than PROMPT_MAX_MESSAGES."),
    "import_too_many_labels": E(400, "An import file holds more labels than PROMPT_IMPORT_MAX_LABELS."),
    "unsupported_pattern": E(400, "A regular expression RE2 will not run."),
    "pattern_too_long": E(400, "A regular expression is over the length limit."),
    "unsupported_schema": E(400, "A JSON Schema draft or feature the server does not run."),
    # --- sharing ---
    "grant_not_found": E(404, "No such grant."),
    "grant_conflict": E(409, "The grantee was just granted access; list grants and retry."),
    "grantee_required": E(400, "Give exactly one of username or team."),
    "invalid_role": E(400, "No such grant role."),
    "invalid_mode": E(400, "A share mode that does not fit (a link only gives view access)."),
    "invalid_expiry": E(400, "The expiry is not in the future."),
    "already_owner": E(400, "The user already owns the prompt."),
    "transfer_not_found": E(404, "No such transfer offer."),
    "link_not_found": E(404, "The share link does not exist or is no longer shared."),
    # --- evaluations ---
    "dataset_not_found": E(404, "No such dataset, or the account cannot see it."),
    "dataset_empty": E(400, "A dataset version needs at least one row."),
    "dataset_in_use": E(409, "Runs or gates use the dataset's versions."),
    "base_required": E(400, "A dataset with versions needs the base the new version edits."),
    "row_not_found": E(404, "A row key is not in the base version."),
    "invalid_row": E(400, "A row is not a JSON object."),
    "invalid_rows": E(400, "Rows of an import do not import."),
    "ragged_row": E(400, "A CSV row has more cells than the header."),
    "value_too_large": E(400, "A row's value is over its byte limit."),
    "too_many_rows": E(400, "A dataset version is over EVAL_DATASET_MAX_ROWS."),
    "invalid_csv": E(400, "The CSV does not parse."),
    "invalid_csv_header": E(400, "The CSV header does not name every column once."),
    "file_required": E(400, "Give exactly one of file or text."),
    "file_not_utf8": E(400, "The file is not UTF-8 text."),
    "invalid_name": E(400, "A name is empty or too long."),
    "import_not_found": E(404, "No such import."),
    "run_not_found": E(404, "No such run."),
    "generation_not_found": E(404, "No such generation, or the account cannot see it."),
    "alert_not_found": E(404, "No such regression alert on this prompt."),
    "alert_resolved": E(409, "The regression alert was already rolled back or dismissed (`status`)."),
    "run_finished": E(409, "The run already finished."),
    "run_active": E(409, "The run is queued or running: cancel it first."),
    "columns_required": E(400, "A run needs at least one column."),
    "too_many_columns": E(400, "A run is over EVAL_RUN_MAX_COLUMNS."),
    "too_many_evaluators": E(400, "A run has more evaluators than it may."),
    "unknown_evaluator": E(400, "No such evaluator."),
    "invalid_evaluator": E(400, "An evaluator is neither a name nor {name, args}."),
    "invalid_evaluator_args": E(400, "An evaluator's arguments are wrong."),
    "judge_without_schema": E(400, "A judge prompt needs a response schema."),
    "judge_schema_invalid": E(400, "A judge's schema lacks score and reason."),
    "gate_not_found": E(404, "The label has no gate."),
    "online_rule_not_found": E(404, "No such online evaluation rule on the prompt."),
    "too_many_online_rules": E(400, "The prompt has ONLINE_EVAL_MAX_RULES online evaluation rules."),
    "evaluator_needs_expected": E(400, "The evaluator needs an expected output; production has none."),
    "eval_required": E(409, "The gate needs a finished run of the candidate first."),
    "eval_not_finished": E(409, "The gate's run has not finished."),
    "eval_wrong_dataset": E(409, "The run used another dataset than the gate's."),
    "eval_wrong_evaluator": E(409, "The run lacks the gate's evaluator."),
    "eval_candidate_missing": E(409, "The run has no column for the candidate."),
    "eval_baseline_missing": E(409, "The run has no column for the baseline."),
    "eval_regression": E(409, "The candidate scores below the baseline by more than the margin."),
    # --- webhooks ---
    "webhook_not_found": E(404, "No such webhook endpoint."),
    "delivery_not_found": E(404, "No such delivery."),
    "too_many_webhooks": E(409, "The account has WEBHOOK_MAX_ENDPOINTS endpoints."),
    "invalid_events": E(400, "The event list is empty or names unknown events."),
    "invalid_webhook_url": E(400, "The webhook URL is not an http(s) URL the server may call."),
    "webhook_url_forbidden": E(400, "The webhook host resolves inside the network."),
    "webhook_host_unresolvable": E(400, "The webhook host does not resolve."),
    # --- blob URLs ---
    "url_expired": E(403, "The signed URL has expired.", "This URL has expired."),
    "url_invalid": E(403, "The signed URL is not valid.", "This URL is not valid."),
    "size_mismatch": E(400, "The upload's size differs from the signed one."),
    # --- chat (HTTP and websocket frames) ---
    "bad_frame": E(400, "A websocket frame is not a JSON object with a string `type`."),
    "unknown_type": E(400, "No such websocket frame type."),
    "invalid_body": E(400, "A message holds a NUL character."),
    "message_too_large": E(413, "A message is over CHAT_MAX_MESSAGE_BYTES."),
    "invalid_client_msg_id": E(400, "client_msg_id is not a string of 1-64 characters."),
    "client_msg_id_reused": E(409, "The client_msg_id was used in another conversation."),
    "send_conflict": E(409, "The send could not be stored; retry it."),
    "invalid_recipient": E(400, "`to` is not a user id."),
    "self_message": E(400, "A message to yourself."),
    "self_block": E(400, "Blocking yourself."),
    "blocked": E(403, "The recipient blocked you."),
    "you_blocked": E(403, "You blocked the recipient."),
    "unknown_contact": E(400, "Typing goes only to contacts."),
    "unknown_conversation": E(404, "No such conversation."),
    "unknown_message": E(404, "No such message."),
    "not_your_message": E(403, "Only the sender can change a message."),
    "message_deleted": E(409, "The message was deleted."),
    "invalid_cursor": E(400, "A cursor is not a sequence number."),
    "cursor_from_future": E(400, "A cursor is ahead of what was sent."),
    "too_many_cursors": E(400, "A hello names more conversations than CHAT_HELLO_MAX_CURSORS."),
    "invalid_query": E(400, "The search has no words."),
    "query_too_long": E(400, "The search query is too long."),
    # --- /v1 batches and files ---
    "file_not_found": E(404, "No such file."),
    "file_in_use": E(409, "A running batch reads the file."),
    "file_too_large": E(400, "The file is over BATCH_MAX_FILE_BYTES."),
    "empty_file": E(400, "The file has no lines."),
    "too_many_lines": E(400, "The file has more than BATCH_MAX_LINES lines."),
    "invalid_file": E(400, "Lines of the file are invalid."),
    "invalid_file_purpose": E(400, "The input file's purpose is not 'batch'."),
    "endpoint_mismatch": E(400, "The file's lines call another endpoint than the batch."),
    "batch_not_found": E(404, "No such batch."),
    "batch_finished": E(409, "The batch already finished."),
    "batch_expired": E(408, "A batch line not run before the completion window ended."),
    "token_limit_exceeded": E(400, "The tier's enqueued batch token limit is reached."),
    "invalid_idempotency_key": E(400, "The Idempotency-Key header is empty or too long."),
    "idempotency_key_reused": E(422, "The Idempotency-Key was used with another body."),
    "idempotency_conflict": E(409, "A request with the same Idempotency-Key is in flight; retry."),
    # --- generation (/v1 and runs; the worker's codes) ---
    "context_length_exceeded": E(400, "The prompt is over the model's context window."),
    "max_tokens_exceeded": E(400, "max_tokens plus the input are over the context window."),
    "too_many_tokens": E(400, "The request needs more tokens than a limit or a batch allows."),
    "empty_input": E(400, "No messages."),
    "queue_full": E(429, "The worker's queue is full."),
    "timeout": E(504, "The generation timed out."),
    "deadline_exceeded": E(504, "The request's deadline passed."),
    "cancelled": E(499, "The request or run was cancelled."),
    "scheduler_stopped": E(503, "The worker is stopping."),
    "events_unavailable": E(503, "The event stream of a generation is unavailable."),
    "gateway_error": E(502, "The gateway lost the generation's event stream."),
    "engine_error": E(502, "The engine failed."),
    "engine_load_failed": E(502, "The engine could not load the model."),
    "engine_protocol_error": E(502, "The engine answered out of protocol."),
    "request_failed": E(502, "The worker failed the request."),
    "out_of_memory": E(502, "The engine ran out of memory."),
    "invalid_messages": E(502, "The chat template failed on the messages."),
    "invalid_prompt_tokens": E(502, "A prompt token id is out of the vocabulary."),
    "batch_full": E(502, "The engine's batch is full."),
    "batch_too_large": E(502, "A batch is over the engine's inputs per call."),
    "duplicate_request": E(502, "A request id is already queued or running."),
    "duplicate_sequence": E(502, "A sequence appears twice in one step."),
    "finished": E(502, "A sequence already finished."),
    "forward_failed": E(502, "The forward pass failed."),
    "device_error": E(502, "A device call failed."),
    "kv_cache_full": E(502, "The engine's KV cache is full."),
    "decode_failed": E(502, "The engine's decode step failed."),
    "grammar_dead_end": E(502, "The structured-output grammar allows no token."),
    "grammar_error": E(502, "The structured-output grammar refused a token."),
    "upstream_error": E(502, "The upstream server's stream failed."),
    "upstream_unavailable": E(502, "The upstream server is unavailable."),
    "upstream_rate_limited": E(502, "The upstream server rate-limited the worker."),
    "upstream_timeout": E(502, "The upstream server timed out."),
    # --- checkpoints and rollouts (model_publish, model_fetch, deploy, /control; worker heartbeats) ---
    "invalid_argument": E(400, "A model or version name, or the piece size, is not valid."),
    "path_not_found": E(400, "A path to publish is not a file or directory."),
    "empty_directory": E(400, "A directory to publish has no files."),
    "invalid_path": E(400, "A file's path inside the checkpoint is not valid."),
    "duplicate_path": E(400, "Two files to publish would have the same path."),
    "file_changed": E(409, "A file changed while it was being published."),
    "version_conflict": E(409, "The model version is already published with other bytes."),
    "no_signing_key": E(503, "This process has no CONFIG_SIGNING_KEY: only the control plane publishes."),
    "invalid_steps": E(400, "A rollout's steps are not increasing percentages in 1..100."),
    "invalid_rollout": E(400, "The action names no rollout."),
    "invalid_action": E(400, "Not a rollout action (pause, resume, promote, rollback)."),
    "version_not_published": E(404, "The model version was never published."),
    "no_stable_version": E(409, "The config document serves no other version to roll back to."),
    "conflict": E(409, "A rollout of the model is already in progress."),
    "not_active": E(409, "The rollout has ended."),
    "stale": E(409, "The rollout has no driver: take it over or abort it."),
    "lease_held": E(409, "Another process drives the rollout."),
    "swarm_credential_missing": E(503, "The worker cannot read the swarm's credential."),
    "manifest_signature": E(502, "The manifest is unsigned or not signed by the control plane."),
    "manifest_invalid": E(502, "The stored manifest is not a valid manifest."),
    "manifest_mismatch": E(502, "A fetched file's SHA-256 is not the manifest's."),
    "torrent_missing": E(502, "The object store has no torrent for a file of the version."),
    "torrent_invalid": E(502, "A stored torrent does not parse."),
    "torrent_mismatch": E(502, "A stored torrent's info hashes are not the manifest's."),
    "torrent_not_private": E(502, "A stored torrent is not a private SSL torrent."),
    "store_error": E(502, "The object store failed a read."),
    "web_seed_refused": E(502, "The object store refused the web seed's request."),
    "storage_error": E(507, "Writing a fetched file to the local cache failed."),
    "no_space": E(507, "The local cache has not enough free space for the version."),
    "stalled": E(504, "The fetch made no progress for too long."),
    "interrupted": E(503, "The fetch was stopped; a restart resumes it."),
}


def spec(code: str) -> ErrorCode:
    try:
        return CODES[code]
    except KeyError:
        raise UnknownErrorCode(f"Error code {code!r} is not in core.error_codes.CODES.") from None


class DomainError(Exception):
    """A refusal raised by services, selectors and views: a registered `code`, a
    message for people, the `field` at fault and `extra` fields for the body.
    Its HTTP status is the code's (core.errors maps it to a response or frame)."""

    def __init__(self, message: str | None = None, *, code: str, field: str | None = None,
                 extra: dict[str, Any] | None = None, headers: dict[str, str] | None = None):
        entry = spec(code)
        self.code = code
        self.extra = extra or {}
        if message is None:  # the registry's: a template filled from extra, else the description
            message = entry.message.format(**self.extra) if entry.message else entry.description
        self.message = message
        self.field = field
        self.headers = headers or {}
        super().__init__(self.message)

    @property
    def status(self) -> int:
        return CODES[self.code].status


TABLE_START = "<!-- errors-table: generated by `python -m core.error_codes`; do not edit -->"
TABLE_END = "<!-- /errors-table -->"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def errors_table() -> str:
    rows = [f"| `{code}` | {e.status} | {e.description} |" for code, e in sorted(CODES.items())]
    return "\n".join(["| Code | Status | Meaning |", "| --- | --- | --- |", *rows])


def docs_with_table(text: str) -> str:
    head, _, rest = text.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    return f"{head}{TABLE_START}\n{errors_table()}\n{TABLE_END}{tail}"


if __name__ == "__main__":
    text = DOCS.read_text()
    if TABLE_START not in text or TABLE_END not in text:
        sys.exit(f"{DOCS} lacks the markers {TABLE_START} ... {TABLE_END}")
    DOCS.write_text(docs_with_table(text))
