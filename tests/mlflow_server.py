"""A real MLflow tracking server for a test: `mlflow server` with a SQLite backend and
its own artifact store in a temporary directory, on a free port of 127.0.0.1, stopped
(every process of it) when the test ends."""

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest

from estimator_dist.supervision import local_cluster
from tests import helpers

_START_SECS = 120


@contextlib.contextmanager
def running():
  """Yields the server's tracking URI."""
  if not shutil.which("mlflow", path=os.path.dirname(helpers.PYTHON)):
    pytest.skip("needs the mlflow server (make setup installs it)")
  root = tempfile.mkdtemp(prefix="estimator_dist_mlflow_")
  port = local_cluster.free_ports(1)[0]
  uri = f"http://127.0.0.1:{port}"
  log = open(os.path.join(root, "server.log"), "wb")
  server = subprocess.Popen(
      [os.path.join(os.path.dirname(helpers.PYTHON), "mlflow"), "server", "--host",
       "127.0.0.1", "--port", str(port), "--workers", "1",
       "--backend-store-uri", f"sqlite:///{root}/mlflow.db",
       "--artifacts-destination", os.path.join(root, "artifacts")],
      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=helpers.child_env(),
      start_new_session=True)
  try:
    deadline = time.monotonic() + _START_SECS
    while True:
      try:
        with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
          if answer.status == 200:
            break
      except OSError:
        pass
      assert server.poll() is None and time.monotonic() < deadline, \
          open(os.path.join(root, "server.log")).read()[-3000:]
      time.sleep(0.5)
    yield uri
  finally:
    with contextlib.suppress(ProcessLookupError):
      os.killpg(server.pid, signal.SIGTERM)  # gunicorn and its workers.
    try:
      server.wait(timeout=15)
    except subprocess.TimeoutExpired:
      os.killpg(server.pid, signal.SIGKILL)
      server.wait()
    log.close()
    shutil.rmtree(root, ignore_errors=True)
