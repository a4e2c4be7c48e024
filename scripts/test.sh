#!/usr/bin/env bash
# Install, then run lint and the whole test suite against the real parts:
# PostgreSQL, Redis, RabbitMQ (already running on the machine) and an S3-protocol
# server (rclone serve s3) that this script starts; then again on the embedded
# default. Extra args go to pytest (both passes).
set -euo pipefail
cd "$(dirname "$0")/.."
# npm installs the pinned esbuild that checks the committed page bundles (scripts/build_js.sh).
if ! command -v npm >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null) \
    || echo "warning: could not install npm; the bundle check will fail" >&2
fi
scripts/install.sh --dev

# Chromium for the browser tests (Debian's package; Playwright drives it).
if [ ! -x /usr/bin/chromium ]; then
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: could not install chromium; browser tests will fail" >&2
fi
# promtool checks deploy/prometheus's rules and runs their unit tests (Debian's prometheus).
if [ ! -x /usr/bin/promtool ]; then
  (apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 \
    || (apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null)) \
    || echo "warning: could not install prometheus; the promtool checks will be skipped" >&2
fi

export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/promptyard}
export REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/1}
export CELERY_BROKER_URL=${TEST_CELERY_BROKER_URL:-amqp://guest:guest@127.0.0.1:5672//}
export DEBUG=false SECRET_KEY=test-secret-key-not-for-production
# Tests and their live servers speak plain http (production has SECURE_HTTPS on).
export SECURE_HTTPS=false
# A fixed Ed25519 pair for config documents (manage.py config_keygen); tests only.
export CONFIG_SIGNING_KEY=${CONFIG_SIGNING_KEY:-4Nj/qaSxEUg0gXXfsqgvFIQAwkWDX+KOJB3ErQzTsSY=}
export CONFIG_PUBLIC_KEY=${CONFIG_PUBLIC_KEY:-}
# The test process runs ORM code on short-lived threads (websocket tests, thread
# races) whose connections never go back to the pool: give it headroom.
export DB_POOL_MAX_SIZE=${DB_POOL_MAX_SIZE:-40}

# A real S3-protocol server that checks SigV4 signatures and presigned-URL expiry.
if [ -z "${S3_ENDPOINT_URL:-}" ]; then
  s3dir=$(mktemp -d)
  port=$(.venv/bin/python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  RCLONE_CONFIG=/dev/null .venv/bin/rclone serve s3 "$s3dir" --addr "127.0.0.1:$port" \
    --auth-key testkey,testsecret >"$s3dir.log" 2>&1 &
  s3pid=$!
  trap 'kill $s3pid 2>/dev/null; rm -rf "$s3dir" "$s3dir.log"' EXIT
  export S3_ENDPOINT_URL=http://127.0.0.1:$port S3_ACCESS_KEY_ID=testkey S3_SECRET_ACCESS_KEY=testsecret
fi
export S3_BUCKET=${S3_BUCKET:-promptyard-test}

.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache
# Static types: the packages of [tool.mypy] in pyproject.toml (strict on core and
# inference_protocol). A minute of CPU: it runs beside the tests, its verdict at the end.
mypy_log=$(mktemp)
.venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_pid=$!
# The documentation site (docs/): a broken link or a page missing from the nav fails the build.
.venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"

# Pass 1: the whole suite against the services. Pass 2: the embedded default that
# scripts/run.sh starts (no service variables: SQLite, in-memory channel layer,
# local-memory cache, in-process worker, local file store), every test not marked
# needs_services. They share nothing, and the suite mostly waits on subprocesses
# and sockets, so the embedded pass runs beside the first (its output follows).
# TEST_PASSES=services or embedded runs one of them.
passes=${TEST_PASSES:-services embedded}
embedded_pid=
if [[ " $passes " == *" embedded "* ]]; then
  vardir=$(mktemp -d)
  embedded_log=$vardir.log
  env -u DATABASE_URL -u REDIS_URL -u CELERY_BROKER_URL -u S3_ENDPOINT_URL -u S3_BUCKET \
    -u S3_ACCESS_KEY_ID -u S3_SECRET_ACCESS_KEY PROMPTYARD_VAR_DIR="$vardir" \
    .venv/bin/python -m pytest "$@" >"$embedded_log" 2>&1 &
  embedded_pid=$!
fi
rc=0
if [[ " $passes " == *" services "* ]]; then
  # The services pass in TEST_WORKERS processes (pytest-xdist, a file per worker at a
  # time, the longest files first: tests/durations.json), each with services of its
  # own (tests/xdist_services.py): the suite mostly
  # waits on subprocesses and sockets. Default 4 (on 2 cores the pass took 17 min in 2
  # processes, 14.9 in 3, 14.1 in 4); 1 when the caller named its own Redis database (one
  # database per run: workers after the first take db 15, 14...).
  workers=${TEST_WORKERS:-$([ -n "${TEST_REDIS_URL:-}" ] && echo 1 || echo 4)}
  xdist=()
  if [ "$workers" -gt 1 ]; then
    xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder)
    for ((i = 0; i < workers; i++)); do
      vhost=$(.venv/bin/python -c "import sys; from tests.xdist_services import worker_vhost; print(worker_vhost(sys.argv[1], sys.argv[2]))" "$CELERY_BROKER_URL" "gw$i")
      rabbitmqctl list_vhosts -q 2>/dev/null | grep -qx "$vhost" \
        || { rabbitmqctl add_vhost "$vhost" >/dev/null && rabbitmqctl set_permissions -p "$vhost" guest '.*' '.*' '.*' >/dev/null; }
    done
  fi
  .venv/bin/python -m pytest -p tests.xdist_services "${xdist[@]}" --durations=25 "$@" || rc=$?
fi
if [ -n "$embedded_pid" ]; then
  erc=0
  wait "$embedded_pid" || erc=$?
  echo "=== the embedded default (second pass) ==="
  cat "$embedded_log"
  rm -rf "$vardir" "$embedded_log"
  # 5: the arguments selected only tests that need the services.
  if [ "$erc" != 0 ] && [ "$erc" != 5 ] && [ "$rc" = 0 ]; then rc=$erc; fi
fi
mrc=0
wait "$mypy_pid" || mrc=$?
echo "=== mypy ==="
cat "$mypy_log"
rm -f "$mypy_log"
if [ "$mrc" != 0 ] && [ "$rc" = 0 ]; then rc=$mrc; fi
exit "$rc"
