"""How well the OpenAPI schema says what the API validates, run by hand:

    TEST_PASSES=services scripts/test.sh bench/schema_fit.py -s -q [-p no:cacheprovider]
    (SCHEMA_FIT_EXAMPLES=N: valid requests per operation, default 10)

It is a pytest module (the test database and the fuzzer's fixture state of
tests/test_fuzz_api.py) that asserts nothing. Every operation but the generating
ones gets up to N requests schemathesis generates in positive mode (data the
schema calls valid), each from the same fixture state, with path parameters and
the ids in bodies naming the fixture's objects (tests/test_fuzz_api.py
positive_calls). It prints, per operation: calls, refused (4xx), and the
refusals grouped by status, error code and field; then the total "refused of
valid". A refusal the schema could have ruled out is a gap in the schema; those
that hang on stored state are listed in tests/test_fuzz_api.py STATE_DEPENDENT
(and a 404/409 for an object that does not exist or is in use is one too).
"""

import collections
import os

import pytest

from tests.conftest import _clean_cache, _object_store_bucket  # noqa: F401 (the suite's fixtures)
from tests.test_fuzz_api import api_schema, fuzz_data, positive_calls, wsgi_app  # noqa: F401

pytestmark = [pytest.mark.needs_services, pytest.mark.django_db]


def test_print_refusals_of_valid_requests(api_schema, fuzz_data, wsgi_app):  # noqa: F811
    examples = int(os.environ.get("SCHEMA_FIT_EXAMPLES", "10"))
    by_operation = collections.defaultdict(list)
    for call in positive_calls(api_schema, fuzz_data, wsgi_app, examples=examples):
        by_operation[call.operation].append(call)
    rows = []
    for operation, calls in by_operation.items():
        refused = [c for c in calls if 400 <= c.status < 500]
        groups = collections.Counter((c.status, c.code, c.field) for c in refused)
        why = "; ".join(f"{n}x {status} {code} ({field})"
                        for (status, code, field), n in groups.most_common())
        rows.append((len(refused), len(calls), operation, why))
    print(f"\n{'operation':<72} {'calls':>5} {'refused':>7}  refusals (status code (field))")
    for refused, calls, operation, why in sorted(rows, key=lambda r: (-r[0] / r[1], r[2])):
        print(f"{operation:<72} {calls:>5} {refused:>7}  {why}")
    total = sum(r[1] for r in rows)
    refused = sum(r[0] for r in rows)
    print(f"refused {refused} of {total} valid requests ({refused / total:.0%}), "
          f"{sum(1 for r in rows if r[0] * 2 > r[1])} of {len(rows)} operations refuse most")
