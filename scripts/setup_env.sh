#!/usr/bin/env bash
# Creates or reuses .venv with the pinned stack and Horovod 0.28.1 built from its source
# (with scripts/fix_horovod_gloo_iface.py) with Gloo and, where Open MPI is installed or
# can be, MPI; installs Bazel as root where it is missing.
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
import pytest, pytest_timeout, xdist, psutil, sklearn, matplotlib, pandas, optuna, mlflow
import optuna_dashboard, tensorboard_plugin_profile, mkdocs, material, mkdocstrings_handlers.python
assert m.version("estimator_dist")
PYEOF
}

# The stamp names pyproject.toml and this script: a change to either reinstalls.
stamp="$VENV/.stack-$(cat pyproject.toml scripts/setup_env.sh | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ] || ! stack_ok; then
  echo "[setup] installing the pinned stack"
  "$PY" -m pip install --quiet --upgrade "pip<25" "setuptools>=64,<70" wheel
  "$PY" -m pip install --quiet -e ".[cpu,sweep,spark,tracking,profile,docs,test]"
  rm -f "$VENV"/.stack-*
  touch "$stamp"
else
  echo "[setup] pinned stack already installed"
fi

# Installs Debian packages as root; elsewhere says what is skipped without them.
apt_install() {  # apt_install "what is skipped without them" package...
  local skipped=$1; shift
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing Debian packages $*"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null; }
  else
    echo "[setup] $* not installed and cannot be installed here (needs root and apt-get):" \
         "$skipped" >&2
  fi
}

# Open MPI lets Horovod ranks on one host all-reduce through shared memory, about five
# times cheaper than Gloo's TCP; Horovod is built with both.
command -v mpicxx >/dev/null 2>&1 \
  || apt_install "Horovod is built with Gloo only" openmpi-bin libopenmpi-dev
# PostgreSQL: the sweep test of a shared study starts a real server from a temporary
# directory (the package's own cluster is not started: stopped here).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt_install "the sweep test of a PostgreSQL study is skipped" postgresql
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    for cluster in /etc/postgresql/*/*; do
      [ -d "$cluster" ] || continue
      pg_ctlcluster "$(basename "$(dirname "$cluster")")" "$(basename "$cluster")" stop \
        2>/dev/null || true
    done
  fi
fi
# SLURM: the tests start a private one-node cluster (munged, slurmctld, slurmd, and
# slurmdbd over a MariaDB server, for sacct) from a temporary directory; the packages' own
# services are not started here (no systemd).
command -v slurmd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 \
  && command -v slurmdbd >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 \
  || apt_install "the real SLURM tests are skipped" slurmctld slurmd slurm-client munge \
       slurmdbd mariadb-server-core mariadb-client-core
# iproute2: the tests of jobs across hosts make test hosts as network namespaces;
# OpenSSH: each test host runs an SSH server, as horovodrun across hosts needs.
command -v ip >/dev/null 2>&1 || apt_install "the tests across test hosts are skipped" iproute2
{ [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null 2>&1; } \
  || apt_install "the tests of Horovod across hosts over SSH are skipped" \
       openssh-server openssh-client
# The library preloaded into a job's processes (contract/preload.py), built once here so
# that no job needs a C compiler: without it, a job on the host network would listen on
# every interface (the launcher refuses it), and TensorFlow's request ids could repeat.
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 \
  || apt_install "the preload library is not built" gcc libc6-dev
"$PY" - <<'PYEOF'
import sys
from estimator_dist.contract import preload
path, why_not = preload.build()
if path:
  print(f"[setup] preload library: {path}")
else:
  print(f"[setup] the preload library cannot be built ({why_not}): --isolation=host refuses to "
        f"start without --allow_every_interface", file=sys.stderr)
PYEOF
# A user's environment as the packaging test needs it: a clean virtual environment that
# holds `tensorflow` 2.15.1 (not -cpu) and nothing else; the test installs the wheel into
# it and takes it back to this list of packages after.
USER_TF_VENV="${ESTIMATOR_DIST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/estimator_dist}/venv-tensorflow-2.15.1"
if [ ! -f "$USER_TF_VENV/baseline.txt" ]; then
  echo "[setup] a clean environment with tensorflow==2.15.1 for the packaging test: $USER_TF_VENV"
  rm -rf "$USER_TF_VENV"
  "$PYTHON_BIN" -m venv "$USER_TF_VENV"
  "$USER_TF_VENV/bin/python" -m pip install --quiet "pip<25" "setuptools>=64,<70" wheel \
    "tensorflow==2.15.1"
  "$USER_TF_VENV/bin/python" -m pip freeze > "$USER_TF_VENV/baseline.txt"
fi
WANT_MPI=$(command -v mpicxx >/dev/null 2>&1 && echo 1 || echo 0)

# Chromium: `make docs` loads pages of the built site in it, headless (scripts/check_site.py).
command -v chromium >/dev/null 2>&1 \
  || apt_install "make docs does not load the site in a browser" chromium

# Bazel builds and tests the packages offline (WORKSPACE): Debian's bootstrap build ships
# the stand-in rule repositories it needs.
if ! command -v bazel >/dev/null 2>&1 || [ ! -d /usr/src/bazel-bootstrap/mock_repos ]; then
  apt_install "make test skips bazel test" bazel-bootstrap bazel-bootstrap-source
fi

horovod_ok() {
  WANT_MPI=$WANT_MPI "$PY" - <<'PYEOF' 2>/dev/null
import os
import horovod, horovod.tensorflow as hvd
assert horovod.__version__ == "0.28.1", horovod.__version__
assert hvd.gloo_built(), "Horovod was built without Gloo"
assert hvd.mpi_built() or os.environ["WANT_MPI"] == "0", "Horovod was built without MPI"
from estimator_dist.task import rank_address
assert rank_address.horovod_fixed(os.path.dirname(horovod.__file__)), "built without the fix"
PYEOF
}

if horovod_ok; then
  echo "[setup] horovod 0.28.1 already built against this TensorFlow"
else
  echo "[setup] building horovod 0.28.1 with Gloo$([ "$WANT_MPI" = 1 ] && echo " and MPI") (about 4 minutes)"
  "$PY" -m pip uninstall --quiet -y horovod >/dev/null 2>&1 || true
  # Horovod's bundled gloo needs CMake < 4; prefer the system one.
  if cmake --version 2>/dev/null | grep -q "version 4"; then
    export CMAKE_POLICY_VERSION_MINIMUM=3.5
  fi
  if [ "$WANT_MPI" = 1 ]; then export HOROVOD_WITH_MPI=1; else export HOROVOD_WITHOUT_MPI=1; fi
  # Built from its source with one fix: Gloo across hosts on the interface horovodrun
  # names (scripts/fix_horovod_gloo_iface.py says why).
  HOROVOD_SRC=$(mktemp -d)
  trap 'rm -rf "$HOROVOD_SRC"' EXIT
  "$PY" -m pip download --quiet --no-deps --no-binary :all: --dest "$HOROVOD_SRC" "horovod==0.28.1"
  tar -xzf "$HOROVOD_SRC"/horovod-0.28.1.tar.gz -C "$HOROVOD_SRC"
  "$PY" scripts/fix_horovod_gloo_iface.py "$HOROVOD_SRC/horovod-0.28.1"
  HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 \
  HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
  MAKEFLAGS="-j$(nproc)" \
    "$PY" -m pip install --quiet --no-cache-dir --no-build-isolation "$HOROVOD_SRC/horovod-0.28.1"
  rm -rf "$HOROVOD_SRC"
  "$PY" -c 'import horovod, os; open(os.path.join(os.path.dirname(horovod.__file__),
    "estimator_dist_fixes.txt"), "w").write("gloo-process-set-iface\n")'
  horovod_ok || { echo "[setup] horovod built but does not load; see the output above" >&2; exit 1; }
  "$VENV/bin/horovodrun" --check-build | sed 's/^/[setup] /'
fi
