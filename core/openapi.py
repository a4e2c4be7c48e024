"""drf-spectacular postprocessing: what every API operation can answer besides its
documented success, so clients and the fuzzer (tests/test_fuzz_api.py) read the
schema as the API behaves.

Every operation can refuse a request (bad input, no or a wrong key, no access, not
found, a method or media type it does not take, a rate limit) with the one error
shape of core/errors.py; that is documented once, as the operation's `4XX`
response. A 5xx is never documented: it is a bug.
"""

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every API error (core/errors.py). `type` and `param` repeat `code` and "
                   "`field` the way OpenAI's SDKs read errors.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Stable, machine-readable."},
                "message": {"type": "string"},
                "field": {"type": "string", "nullable": True},
                "type": {"type": "string"},
                "param": {"type": "string", "nullable": True},
            },
            "required": ["code", "message"],
        },
    },
    "required": ["error"],
}

_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def add_error_responses(result, generator, request, public):
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", ERROR_SCHEMA)
    error = {"description": "The request was refused (the body says why, with a stable code).",
             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            if not any(str(code).startswith("4") for code in responses):
                responses["4XX"] = error
    return result
