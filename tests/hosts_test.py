"""Jobs across two test hosts (network namespaces on a private link, tests/netns_hosts.py):
tasks placed on both hosts with TF_CONFIG naming their addresses train together; each
host places its own training processes; every server listens on its host's address only."""

import os
import re
import socket
import subprocess
import time

import pytest

from estimator_dist.contract import cluster as cluster_lib
from tests import helpers
from tests import netns_hosts

# One pair of hosts for the file: its tests run in one process of the suite (xdist).
pytestmark = [pytest.mark.processes, pytest.mark.xdist_group("hosts")]
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


# Horovod across the two hosts over SSH, started by the launcher on host 1 as a user starts
# `horovodrun -H host1:1,host2:1` on a cluster.

@pytest.fixture(scope="module")
def ssh(hosts, tmp_path_factory):
  with netns_hosts.ssh_servers(hosts, str(tmp_path_factory.mktemp("ssh"))) as client:
    yield client


@pytest.fixture(autouse=True)
def nothing_left(hosts):
  """No rank a failed test left on a host (SSH started it there) runs into the next."""
  yield
  for host in hosts:
    netns_hosts.stop_processes(host)


class Sockets(helpers.Sampler):
  """Reads every TCP socket on each host while a job runs: `listening[host index]` =
  {(process name, address)} of those that listen, `names[host index]` = the names of the
  processes with any."""

  def __init__(self, hosts):
    super().__init__()
    self.hosts = hosts
    self.listening, self.names = [set() for _ in hosts], [set() for _ in hosts]

  def sample(self):
    for n, host in enumerate(self.hosts):
      table = subprocess.run(host.command("ss", "-Htanp"), capture_output=True, text=True,
                             check=False).stdout
      for row in table.splitlines():
        names = set(re.findall(r'\("([^"]+)"', row))
        self.names[n] |= names
        if row.startswith("LISTEN"):
          address = row.split()[3].rpartition(":")[0].strip("[]")
          self.listening[n] |= {(name, address) for name in names or {"?"}}

  def assert_private(self):
    """Every socket that listens on a host does so on its private address or loopback; a
    rank ran on each host."""
    for host, listening, names in zip(self.hosts, self.listening, self.names):
      allowed = {host.address, f"::ffff:{host.address}", "127.0.0.1", "::1"}
      assert all(address in allowed for _, address in listening), (host.address, listening)
      assert "plain_model.py" in names, (host.address, names)


def horovod_job(hosts, ssh, *launch_args, program_args=(),
                program=(helpers.PYTHON, "-m", "tests.programs.plain_model")):
  """A launcher on host 1 running horovod ranks on both hosts."""
  command = helpers.launch_command(
      "--strategy=horovod", f"--network_interface={netns_hosts.INTERFACE}",
      f"--horovodrun_args={ssh.horovodrun_args}", *launch_args,
      program=(*program, *program_args))
  return helpers.Job(command=hosts[0].command(*command), env=ssh.env(helpers.child_env()))


@pytest.mark.parametrize("controller", ["mpi", "gloo"])
def test_horovod_across_two_hosts_over_ssh(hosts, ssh, controller, tmp_path):
  with Sockets(hosts) as sockets:
    job = horovod_job(hosts, ssh, "--num_workers=2",
                      f"--hosts={hosts[0].address}:1,{hosts[1].address}:1",
                      f"--horovod_controller={controller}",
                      program_args=[f"--model_dir={tmp_path}", "--train_steps=300"])
    try:
      code = job.wait(timeout=300)
    finally:
      job.kill()
  assert code == 0, job.output[-5000:]
  summary, = helpers.summaries(job.output)
  assert summary["workers"] == "2", summary
  assert float(summary["eval_accuracy"]) >= 0.85, summary
  sockets.assert_private()


def test_an_unmodified_program_trains_with_horovod_across_two_hosts(hosts, ssh, tmp_path):
  """TensorFlow's premade tutorial, which never imports estimator_dist, instrumented on
  each host: its ranks agree through the mailbox in the model_dir both hosts share."""
  model_dir = tmp_path / "run"
  job = horovod_job(hosts, ssh, "--num_workers=2", f"--model_dir={model_dir}",
                    f"--hosts={hosts[0].address}:1,{hosts[1].address}:1",
                    program=(helpers.PYTHON, "-m", "tests.programs.upstream.premade_estimator"))
  try:
    code = job.wait(timeout=300)
  finally:
    job.kill()
  assert code == 0, job.output[-5000:]
  helpers.check_premade_trained_together(job.output, strategy="horovod")
  assert list(model_dir.glob("model.ckpt-5000.index")), sorted(os.listdir(model_dir))
  left = os.listdir(model_dir / "estimator_dist")
  assert not [name for name in left if "mailbox" in name], left  # It went with the job.
  # Without a directory both hosts share, the job is refused before any rank starts.
  job = horovod_job(hosts, ssh, "--num_workers=2",
                    f"--hosts={hosts[0].address}:1,{hosts[1].address}:1",
                    program=(helpers.PYTHON, "-m", "tests.programs.upstream.premade_estimator"))
  assert job.wait(timeout=60) == 2, job.output[-3000:]
  assert "must be a directory every host shares (not a new temporary directory" in job.output


def test_elastic_horovod_across_two_hosts_loses_host_2_and_gets_it_back(hosts, ssh, tmp_path):
  """The discovery script drops host 2, then lists it again; the global batch stays 64."""
  listed, script = tmp_path / "hosts", tmp_path / "discover.sh"
  both = "".join(f"{host.address}:1\n" for host in hosts)
  listed.write_text(both)
  script.write_text(f"#!/bin/sh\ncat {listed}\n")
  script.chmod(0o755)
  model_dir, steps = tmp_path / "run", 3000
  with Sockets(hosts) as sockets:
    job = horovod_job(hosts, ssh, "--num_workers=2", "--elastic", "--min_workers=1",
                      "--max_workers=2", f"--host_discovery_script={script}",
                      program_args=[f"--model_dir={model_dir}", f"--train_steps={steps}",
                                    "--save_checkpoints_steps=500", "--global_batch_size=64",
                                    "--batch_size=32"])
    try:
      for wanted, hosts_then in (("model.ckpt-500.index", f"{hosts[0].address}:1\n"),
                                 ("round on 1 rank(s)", both)):
        deadline = time.monotonic() + 180
        while not ((model_dir / wanted).exists() or wanted in job.output):
          assert job.process.poll() is None and time.monotonic() < deadline, job.output[-5000:]
          time.sleep(0.1)
        listed.write_text(hosts_then)
      code = job.wait(timeout=400)
    finally:
      job.kill()
  output = job.output
  assert code == 0, output[-5000:]
  rounds = [int(n) for n in re.findall(r"elastic round on (\d) rank\(s\)", output)]
  assert rounds == [2, 1, 2], output[-5000:]
  summary, = helpers.summaries(output)
  assert (summary["steps"], summary["global_batch"]) == (str(steps), "64"), summary
  assert float(summary["eval_accuracy"]) >= 0.85, summary
  sockets.assert_private()


def test_a_host_unreachable_over_ssh_fails_the_job_at_once_naming_it(hosts, ssh, tmp_path):
  # Host 2 answers at a second address where no SSH server listens.
  nobody = hosts[1].address.rpartition(".")[0] + ".3"
  address = ["dev", netns_hosts.INTERFACE, f"{nobody}/24"]
  subprocess.run(["ip", "-n", hosts[1].namespace, "addr", "add", *address], check=True)
  job = horovod_job(hosts, ssh, "--num_workers=2", f"--hosts={hosts[0].address}:1,{nobody}:1",
                    program_args=[f"--model_dir={tmp_path}"])
  try:
    code = job.wait(timeout=120)
  finally:
    job.kill()
    subprocess.run(["ip", "-n", hosts[1].namespace, "addr", "del", *address], check=True)
  assert code == 1, job.output[-3000:]
  assert f"ssh not successful for host {nobody}:" in job.output, job.output[-3000:]
  assert "job failed with exit code 1" in job.output, job.output[-3000:]
  assert "plain_model" not in job.output  # No rank started.
