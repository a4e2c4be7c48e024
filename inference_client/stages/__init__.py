"""The /v1 request path as named stages, each a small function over one
``Call`` (stages/call.py); the stage names are the phases of the Server-Timing
header (docs/architecture.md, "The path of a /v1 request"):

- authenticate (stages/request.py): the API key, or the session user and its tier;
- parse (stages/request.py): the body and the Idempotency-Key / X-Prompt-* headers;
- resolve (stages/resolve.py): the model, in the request's config snapshot;
- cache (stages/cache.py): an Idempotency-Key retry's answer, or the prompt cache's;
- admit (stages/admit.py): buckets, capacity, backpressure; the version;
- publish (stages/publish.py): the generation onto its queue;
- stream (stages/publish.py): its events back, from the event log;
- record (stages/record.py): usage record, token refund, slot, cache, metrics.

inference_client.services.completion_create runs resolve to stream (record
runs when the generation ends); the views run authenticate and parse.
"""
