#!/usr/bin/env bash
# Creates or reuses .venv with the pinned stack and Horovod 0.28.1 built with Gloo.
# Idempotent: what is installed is skipped; a Horovod that does not load against
# the installed TensorFlow is rebuilt.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON_BIN=${PYTHON_BIN:-python3}
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
  echo "[setup] creating $VENV"
  "$PYTHON_BIN" -m venv "$VENV"
fi

stack_ok() {
  "$PY" - <<'PYEOF' 2>/dev/null
import importlib.metadata as m
assert m.version("tensorflow-cpu") == "2.15.1"
assert m.version("tensorflow-estimator") == "2.15.0"
import pytest, pytest_timeout, psutil, sklearn
assert m.version("estimator_dist")
PYEOF
}

# The stamp names this setup.py and script: a change to either reinstalls.
stamp="$VENV/.stack-$(cat setup.py scripts/setup_env.sh | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ] || ! stack_ok; then
  echo "[setup] installing the pinned stack"
  "$PY" -m pip install --quiet --upgrade "pip<25" "setuptools<70" wheel
  "$PY" -m pip install --quiet -e ".[test]"
  rm -f "$VENV"/.stack-*
  touch "$stamp"
else
  echo "[setup] pinned stack already installed"
fi

horovod_ok() {
  "$PY" - <<'PYEOF' 2>/dev/null
import horovod, horovod.tensorflow as hvd
assert horovod.__version__ == "0.28.1", horovod.__version__
assert hvd.gloo_built(), "Horovod was built without Gloo"
PYEOF
}

if horovod_ok; then
  echo "[setup] horovod 0.28.1 with Gloo already built against this TensorFlow"
else
  echo "[setup] building horovod 0.28.1 with Gloo (about 3 minutes)"
  "$PY" -m pip uninstall --quiet -y horovod >/dev/null 2>&1 || true
  # Horovod's bundled gloo needs CMake < 4; prefer the system one.
  if cmake --version 2>/dev/null | grep -q "version 4"; then
    export CMAKE_POLICY_VERSION_MINIMUM=3.5
  fi
  HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
  HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
  MAKEFLAGS="-j$(nproc)" \
    "$PY" -m pip install --quiet --no-cache-dir --no-build-isolation "horovod==0.28.1"
  horovod_ok || { echo "[setup] horovod built but does not load; see the output above" >&2; exit 1; }
  "$VENV/bin/horovodrun" --check-build | sed 's/^/[setup] /'
fi
