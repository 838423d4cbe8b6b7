"""The standalone client mode: one process drives a cluster of standard TensorFlow servers."""

import json
import os
import signal
import subprocess

import pytest

from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.supervision import local_cluster
from tests import helpers

pytestmark = pytest.mark.processes


def test_parameter_server_client_trains_on_standard_servers(tmp_path):
  ports = local_cluster.free_ports(3)
  cluster = {"worker": [f"127.0.0.1:{p}" for p in ports[:2]], "ps": [f"127.0.0.1:{ports[2]}"]}
  servers = []
  try:
    for role, index in [("worker", 0), ("worker", 1), ("ps", 0)]:
      env = helpers.child_env(TF_CONFIG=cluster_lib.tf_config(cluster, role, index))
      servers.append(subprocess.Popen(
          [helpers.PYTHON, "-m", "estimator_dist.jobs.server"], env=env, cwd=helpers.REPO,
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    code, output = helpers.run(
        [helpers.PYTHON, "-m", "tests.programs.plain_model", "--strategy=parameter_server",
         f"--remote_cluster={json.dumps(cluster)}", f"--model_dir={tmp_path}",
         "--train_steps=1000"], timeout=240)
  finally:
    for server in servers:
      os.killpg(server.pid, signal.SIGKILL)
      server.wait()
  assert code == 0, output[-5000:]
  found = helpers.summaries(output)
  assert len(found) == 1, output[-5000:]
  assert found[0]["strategy"] == "parameter_server"
  assert float(found[0]["eval_accuracy"]) >= 0.85
  assert "STANDALONE_CLIENT" in output
  # Both remote workers trained: the client ran a training loop for each, in a thread of
  # its own, and each loop logged its loss.
  threads = {line.split()[2] for line in output.splitlines()
             if "basic_session_run_hooks" in line and "loss = " in line}
  assert len(threads) == 2, output[-5000:]
