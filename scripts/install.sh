#!/usr/bin/env bash
# Creates .venv and installs what one profile needs, from the hashed lock files in
# requirements/ (made by scripts/lock.sh from pyproject.toml):
#   scripts/install.sh          the embedded default and the gateway   requirements/default.txt
#   scripts/install.sh --ml     + the 'ml' group (torch, transformers, sentence-transformers)
#   scripts/install.sh --dev    + 'ml' and 'dev' (tests, lint, benchmarks)
# Idempotent: a second run with the same lock files installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  "") profile=default ;;
  --ml) profile=ml ;;
  --dev) profile=dev ;;
  *) echo "usage: scripts/install.sh [--ml | --dev]" >&2; exit 2 ;;
esac
lock=requirements/$profile.txt
PY=${PYTHON:-python3}
WHEELS=${PROMPTYARD_WHEEL_CACHE:-$HOME/.cache/promptyard/wheels}
# llama.cpp's default build uses every instruction the CPU advertises; some VMs
# forbid AMX/AVX512 and crash with "Illegal instruction", so pin a portable set.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF"

# A checkout without .venv links one that every checkout with the same lock files
# and Python shares (under PROMPTYARD_VENV_CACHE): a second clone, CI's included,
# finds it installed. PROMPTYARD_VENV_CACHE= (empty) makes a venv of the checkout's own.
VENVS=${PROMPTYARD_VENV_CACHE-$HOME/.cache/promptyard/venvs}
if [ ! -e .venv ] && [ -n "$VENVS" ]; then
  shared=$VENVS/$(cat requirements/*.txt pyproject.toml <("$PY" --version) | sha256sum | cut -c1-16)
  mkdir -p "$VENVS"
  ln -s "$shared" .venv
fi
if [ -L .venv ]; then  # one install at a time into a shared venv
  exec 9>"$(readlink .venv).lock"
  flock 9
fi
venv=$(readlink -f .venv)
[ -x .venv/bin/python ] || "$PY" -m venv "$venv"
# pip by the venv's own path: the scripts it writes name that python, not a link to it.
PIP="$venv/bin/python -m pip --disable-pip-version-check -q"
stamp=.venv/.promptyard-$profile
digest=$(cat "$lock" pyproject.toml | sha256sum | cut -d' ' -f1)
# The pages' bundler (esbuild, package-lock.json): scripts/build_js.sh and its test.
if [ "$profile" = dev ] && [ ! -x node_modules/.bin/esbuild ]; then
  npm ci --no-audit --no-fund --silent || echo "warning: npm ci failed; scripts/build_js.sh cannot run" >&2
fi
[ "$(cat "$stamp" 2>/dev/null)" = "$digest" ] && exit 0

# llama-cpp-python ships only as source here and compiles for minutes: build its
# wheel once, from the locked sdist (hash-checked), into a cache outside the
# checkout, then install from the cache; the lock then finds it installed.
llama=$(mktemp)
trap 'rm -f "$llama"' EXIT
awk '/^llama-cpp-python==/ {p = 1} p {print; if ($0 !~ /\\$/) exit}' "$lock" >"$llama"
version=$(sed -n 's/^llama-cpp-python==\([^ ;]*\).*/\1/p' "$llama")
if [ "$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('llama-cpp-python'))" 2>/dev/null)" != "$version" ]; then
  mkdir -p "$WHEELS"
  if ! ls "$WHEELS"/llama_cpp_python-"$version"-*.whl >/dev/null 2>&1; then
    echo "Building llama-cpp-python $version (one time, 5-8 minutes)..."
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" $PIP wheel --no-cache-dir --no-deps --require-hashes \
      -w "$WHEELS" -r "$llama"
  fi
  $PIP install --no-deps "$WHEELS"/llama_cpp_python-"$version"-*.whl
fi

# The lock is complete (every dependency pinned and hashed), hence --no-deps. A
# download cut short fails its hash check: the second try fetches afresh.
$PIP install --require-hashes --no-deps -r "$lock" \
  || $PIP install --no-cache-dir --require-hashes --no-deps -r "$lock"

# torch's build is the host's (CPU here, CUDA on a GPU host, which may install its
# own build first): the version pyproject.toml pins, outside the lock files, after
# them (its own dependencies then find the locked ones in place).
if [ "$profile" != default ] && ! .venv/bin/python -c "import torch" 2>/dev/null; then
  torch=$(.venv/bin/python -c "import tomllib; ml = tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['ml']; print(next(r for r in ml if r.startswith('torch')))")
  $PIP install "$torch"
fi

echo "$digest" >"$stamp"
