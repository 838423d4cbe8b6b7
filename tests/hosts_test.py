"""Jobs across two test hosts (network namespaces on a private link, tests/netns_hosts.py):
tasks placed on both hosts with TF_CONFIG naming their addresses train together; each
host places its own training processes; every server listens on its host's address only."""

import os
import socket
import subprocess
import time

import pytest

from estimator_dist.task import cluster as cluster_lib
from tests import helpers
from tests import netns_hosts

pytestmark = pytest.mark.processes
_LISTEN = "0A"


@pytest.fixture(scope="module")
def hosts():
  with netns_hosts.two_hosts() as made:
    yield made


def _address(hex_address):
  """'0100007F:1F90' or a tcp6 row's address -> ('127.0.0.1', 8080)."""
  ip, port = hex_address.split(":")
  raw = bytes.fromhex(ip)
  raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # Host-order words.
  return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw), int(
      port, 16)


def listening(pid):
  """(address, port) of each socket process `pid` listens on, in its own network."""
  try:
    sockets = {os.readlink(f"/proc/{pid}/fd/{fd}")
               for fd in os.listdir(f"/proc/{pid}/fd")}
    found = set()
    for table in ("tcp", "tcp6"):
      with open(f"/proc/{pid}/net/{table}") as f:
        for row in (line.split() for line in f.readlines()[1:]):
          if row[3] == _LISTEN and f"socket:[{row[9]}]" in sockets:
            found.add(_address(row[1]))
    return found
  except OSError:
    return set()


def run_job(hosts, strategy, placement, model_dir, log_dir, steps=200):
  """Starts each task of `placement` ({role: [host index, ...]}) on its host, watches the
  sockets they listen on until all end; ({task: (exit code, output, listening)})."""
  ports = iter(range(2222, 2300))  # Each host is a fresh network: any port is free.
  cluster = {role: [f"{hosts[h].address}:{next(ports)}" for h in on]
             for role, on in placement.items()}
  tasks = {}
  for role, on in placement.items():
    for index, host in enumerate(on):
      name = f"{role}:{index}"
      log = open(log_dir / f"{role}_{index}.log", "w+")  # pylint: disable=consider-using-with
      env = helpers.child_env(TF_CONFIG=cluster_lib.tf_config(cluster, role, index))
      process = subprocess.Popen(
          hosts[host].command(helpers.PYTHON, "-m", "tests.programs.plain_model",
                              f"--strategy={strategy}", f"--model_dir={model_dir}",
                              f"--train_steps={steps}"),
          stdout=log, stderr=subprocess.STDOUT, env=env, cwd=helpers.REPO,
          start_new_session=True)
      tasks[name] = (process, log, set())
  deadline = time.monotonic() + 300
  try:
    while any(p.poll() is None for p, _, _ in tasks.values()):
      assert time.monotonic() < deadline, "the job did not end within 300 s"
      for process, _, seen in tasks.values():
        seen |= listening(process.pid)
      time.sleep(0.3)
  finally:
    for process, _, _ in tasks.values():
      if process.poll() is None:
        process.kill()
      process.wait()
  ended = {}
  for name, (process, log, seen) in tasks.items():
    log.seek(0)
    ended[name] = (process.returncode, log.read(), seen)
    log.close()
  return cluster, ended


@pytest.mark.parametrize("strategy,placement,local", [
    # Chief and worker 0 share host 1, worker 1 is alone on host 2.
    ("multi_worker", {"chief": [0], "worker": [0, 1]},
     {"chief:0": "0 of 2", "worker:0": "1 of 2", "worker:1": None}),
    ("parameter_server", {"chief": [0], "worker": [1], "ps": [1]},
     {"chief:0": None, "worker:0": None, "ps:0": None}),
])
def test_a_job_across_two_hosts(hosts, strategy, placement, local, tmp_path):
  cluster, ended = run_job(hosts, strategy, placement, tmp_path / "run", tmp_path)
  for name, (code, output, _) in ended.items():
    assert code == 0, f"{name}:\n{output[-4000:]}"
  chief = ended["chief:0"][1]
  found = helpers.summaries(chief)
  assert len(found) == 1, chief[-4000:]
  assert found[0]["workers"] == str(1 + len(placement["worker"])), found
  assert float(found[0]["eval_accuracy"]) >= 0.85, found
  for name, (_, output, seen) in ended.items():
    role, index = name.split(":")
    address = cluster[role][int(index)]
    host, port = address.rsplit(":", 1)
    # The cluster view: the task is the one its TF_CONFIG names, rank by rank.
    if role != "ps":
      assert f"{name} (rank " in output, output[-3000:]
    # Placement per host: two training processes on host 1 split its CPUs.
    if local[name]:
      assert f"training process {local[name]} on this host" in output, output[-3000:]
    else:
      assert "on this host runs on CPUs" not in output, output[-3000:]
    # Trust: the server listens on the host's own address, nothing on every interface.
    assert (host, int(port)) in seen or (f"::ffff:{host}", int(port)) in seen, (name, seen)
    assert all(ip in (host, f"::ffff:{host}", "127.0.0.1", "::1") for ip, _ in seen), (
        name, seen)
