"""Rotating SECRET_KEY (docs/operations.md, "Rotating keys"): what the old key signed
still verifies in a process that lists it in SECRET_KEY_FALLBACKS, and only there."""

import os
import subprocess
import sys

import pytest

from tests.livesubprocess import ROOT

pytestmark = pytest.mark.any_profile

SCRIPT = """
import sys
import django
django.setup()
from django.core import signing
if sys.argv[1] == "sign":
    print(signing.dumps("grant", salt="rotation"))
else:
    try:
        print(signing.loads(sys.argv[2], salt="rotation"))
    except signing.BadSignature:
        print("bad signature")
"""


def _run(env: dict[str, str], *args: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "SECRET_KEY_FALLBACKS")}
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], cwd=ROOT, capture_output=True, text=True,
                          env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env}, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_former_key_verifies_what_it_signed_only_while_it_is_a_fallback():
    token = _run({"SECRET_KEY": "old-key"}, "sign")
    rotating = {"SECRET_KEY": "new-key", "SECRET_KEY_FALLBACKS": "older-key,old-key"}
    assert _run(rotating, "check", token) == "grant"
    assert _run({"SECRET_KEY": "new-key"}, "check", token) == "bad signature"
