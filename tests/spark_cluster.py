"""A real Spark standalone cluster for tests: a master and a worker started with pyspark's
own `spark-class` on 127.0.0.1 with free ports, and stopped (with every executor they
started) when the tests end."""

import contextlib
import glob
import os
import subprocess
import tempfile
import shutil
import time
import uuid

import psutil
import pytest

from estimator_dist.supervision import local_cluster
from tests import helpers

CORES = 2
MARKER_VAR = "ESTIMATOR_DIST_TEST_SPARK_CLUSTER"


class Cluster:
  """The running cluster: its master URL and the processes of its executors."""

  def __init__(self, master, marker, daemons, work_dir):
    self.master, self._marker, self._daemons = master, marker, daemons
    self.work_dir = work_dir

  def executor_output(self):
    """{application: what its executors printed} of every application run so far."""
    found = {}
    for path in sorted(glob.glob(os.path.join(self.work_dir, "app-*", "*", "std*"))):
      app = os.path.basename(os.path.dirname(os.path.dirname(path)))
      with open(path, errors="replace") as f:
        found[app] = found.get(app, "") + f.read()
    return found

  def processes(self):
    """Every process the worker started (executors, their Python workers, the training),
    not the master and worker themselves."""
    daemons = {d.pid for d in self._daemons}
    found = []
    for p in psutil.process_iter():
      with contextlib.suppress(psutil.Error):
        if (p.pid not in daemons and p.status() != psutil.STATUS_ZOMBIE and
            p.environ().get(MARKER_VAR) == self._marker):
          found.append(p)
    return found

  def executors(self):
    return [p for p in self.processes() if "CoarseGrainedExecutorBackend" in " ".join(p.cmdline())]


def _spark_class():
  try:
    import pyspark  # pylint: disable=g-import-not-at-top
  except ImportError:
    pytest.skip("pyspark is not installed (make setup installs it)")
  return os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")


def _says(log, text):
  with open(log) as f:
    return text in f.read()


def _wait_for(predicate, what, timeout, log):
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if predicate():
      return
    time.sleep(0.2)
  with open(log) as f:
    raise AssertionError(f"{what} after {timeout}s; its log:\n{f.read()[-3000:]}")


@contextlib.contextmanager
def running():
  """Yields a started `Cluster`; stops the worker, its executors and the master."""
  if not shutil.which("java"):
    pytest.skip("Spark needs Java (17 is on the machines we test on)")
  spark_class, marker = _spark_class(), uuid.uuid4().hex
  root = tempfile.mkdtemp(prefix="estimator_dist_spark_cluster_")
  env = {k: v for k, v in helpers.child_env().items() if k != helpers.TOKEN_VAR}
  env.update({MARKER_VAR: marker, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": root,
              "SPARK_WORKER_DIR": os.path.join(root, "work"), "PYSPARK_PYTHON": helpers.PYTHON})
  port, master_ui, worker_ui = local_cluster.free_ports(3)
  master = f"spark://127.0.0.1:{port}"
  daemons = []

  def start(name, *args):
    log = os.path.join(root, f"{name}.log")
    with open(log, "w") as out:
      daemons.append(subprocess.Popen([spark_class, *args], stdout=out,
                                      stderr=subprocess.STDOUT, env=env, cwd=root,
                                      start_new_session=True))
    return log

  try:
    log = start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                "--port", str(port), "--webui-port", str(master_ui))
    _wait_for(lambda: _says(log, "I have been elected leader"), "no Spark master", 60, log)
    log = start("worker", "org.apache.spark.deploy.worker.Worker", master, "--host",
                "127.0.0.1", "--cores", str(CORES), "--memory", "3g", "--webui-port",
                str(worker_ui), "--work-dir", env["SPARK_WORKER_DIR"])
    _wait_for(lambda: _says(log, "Successfully registered with master"),
              "no Spark worker registered", 60, log)
    yield Cluster(master, marker, [psutil.Process(d.pid) for d in daemons],
                  env["SPARK_WORKER_DIR"])
  finally:
    for daemon in reversed(daemons):  # The worker first: it stops its executors.
      daemon.terminate()
      try:
        daemon.wait(30)
      except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
    left = Cluster(master, marker, [], root).processes()
    for p in left:
      with contextlib.suppress(psutil.Error):
        p.kill()
    shutil.rmtree(root, ignore_errors=True)
