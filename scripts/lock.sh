#!/usr/bin/env bash
# Resolve pyproject.toml's dependencies into the hashed lock files that
# scripts/install.sh installs from (run after changing a dependency):
#   requirements/default.txt   the embedded default and the gateway
#   requirements/ml.txt        + the 'ml' group (GPU workers with the transformers engine)
#   requirements/dev.txt       + 'ml' and 'dev' (tests, lint, benchmarks)
# The larger sets are resolved first and constrain the smaller ones, so a package
# has one version in all three; requirements/constraints.txt holds a few back.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
compile() {
  out=$1; shift
  "$UV" pip compile pyproject.toml --quiet --generate-hashes --universal --python-version 3.11 \
    --override requirements/overrides.txt -c requirements/constraints.txt \
    --custom-compile-command scripts/lock.sh "$@" -o "$out"
}
compile requirements/dev.txt --extra ml --extra dev
compile requirements/ml.txt --extra ml -c requirements/dev.txt
compile requirements/default.txt -c requirements/dev.txt --override requirements/overrides-default.txt
