#!/usr/bin/env bash
# Install, then run the app on the embedded default (no services needed:
# SQLite, in-memory channel layer, local file store, in-process worker).
# Prints the URL and a demo login. Extra args go to `manage.py serve`.
#
# scripts/run.sh --production [--host H] [--port P]: the whole single-host
# production stack from the environment's settings, run by honcho
# (docs/operations.md): checks the settings and services, migrates, writes
# VAR_DIR/Procfile (`manage.py procfile`), and runs every process in it until
# Ctrl-C (or SIGTERM), which stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --production ]; then
  shift
  host=0.0.0.0 port=8000
  while [ $# -gt 0 ]; do
    case "$1" in
      --host) host=$2; shift 2;;
      --port) port=$2; shift 2;;
      *) echo "scripts/run.sh --production: unknown argument $1 (--host H, --port P)" >&2; exit 2;;
    esac
  done
  .venv/bin/python manage.py doctor --before-start \
    || { echo "scripts/run.sh --production: fix each 'fail' line above, then run it again" >&2; exit 2; }
  if ! .venv/bin/python -c "import honcho" 2>/dev/null; then
    echo "scripts/run.sh --production needs honcho in .venv: run scripts/install.sh" >&2
    exit 2
  fi
  .venv/bin/python manage.py migrate --no-input -v 1
  var=${PROMPTYARD_VAR_DIR:-var}
  mkdir -p "$var/log"
  log=$var/log/production.log
  .venv/bin/python manage.py procfile --host "$host" --port "$port" --out "$var/Procfile"
  echo "Logs: every process's lines come here, prefixed with its name, and are appended to $log"
  echo "Ctrl-C stops every process."
  # honcho, waiting SHUTDOWN_GRACE_S and a little more before it SIGKILLs a stopping
  # process. tee ignores Ctrl-C (-i) and ends when honcho closes its output, after the last process.
  exec .venv/bin/python manage.py stack "$var/Procfile" > >(tee -i -a "$log") 2>&1
fi
scripts/install.sh   # the default profile only: no torch, no test tools
# The embedded default: its own random SECRET_KEY in var/, the demo user. Nothing
# else runs without SECRET_KEY or creates the demo user.
export PROMPTYARD_EMBEDDED=1
exec .venv/bin/python manage.py serve "$@"
