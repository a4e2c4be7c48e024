#!/usr/bin/env bash
# Install, then run the app on the embedded default (no services needed:
# SQLite, in-memory channel layer, local file store, in-process worker).
# Prints the URL and a demo login. Extra args go to `manage.py serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh   # the default profile only: no torch, no test tools
# The embedded default: its own random SECRET_KEY in var/, the demo user. Nothing
# else runs without SECRET_KEY or creates the demo user.
export PROMPTYARD_EMBEDDED=1
exec .venv/bin/python manage.py serve "$@"
