"""A real one-node SLURM cluster for tests: munged, slurmctld and slurmd started as root
from Debian's packages, with their own key, config, state, spool and logs in a temporary
directory and their own free ports, and its accounting (sacct) in slurmdbd over a MariaDB
server of its own; stopped (and every job cancelled) when the tests end."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import psutil
import pytest

from estimator_dist.contract import env_vars
from estimator_dist.supervision import local_cluster
from tests import helpers

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "slurmdbd", "mariadbd",
           "mariadb-install-db", "sbatch", "scancel", "scontrol", "sinfo", "sacct")
CPUS = 2
_CONF = """\
ClusterName=estimator-dist-test
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={dbd_port}
AccountingStoragePass={root}/munge/socket
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MailProg=/bin/true
KillWait=5
MinJobAge=600
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
NodeName=localhost CPUs={cpus} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""
_DBD_CONF = """\
AuthType=auth/munge
AuthInfo=socket={root}/munge/socket
DbdHost=localhost
DbdPort={dbd_port}
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=root
StorageLoc=slurm_acct_db
PidFile={root}/slurmdbd.pid
LogFile={root}/slurmdbd.log
"""


class Cluster:
  """The running cluster: submit scripts, read job states, cancel, requeue."""

  def __init__(self, root):
    self.root = root
    self.env = {**helpers.child_env(), "SLURM_CONF": os.path.join(root, "slurm.conf")}
    self._outputs = {}  # {job id: the file its output goes to}

  def command(self, *args, check=True):
    done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=60,
                          check=False)
    if check and done.returncode != 0:
      raise AssertionError(f"{' '.join(args)}: {done.stdout}{done.stderr}")
    return done.stdout

  def sbatch(self, script, *, output, args=()):
    """Submits `script` (text) from the repository; its job id."""
    path = output + ".sbatch"
    with open(path, "w") as f:
      f.write(script)
    printed = self.command("sbatch", "--parsable", f"--output={output}",
                           f"--chdir={helpers.REPO}", *args, path)
    job_id = printed.strip().split(";")[0]
    self._outputs[job_id] = output
    return job_id

  def runs(self, job_id, timeout=30):
    """[(state, exit code)] of each run of the finished job, as sacct has them (a requeue
    keeps the run before it), once slurmdbd has the last run's end."""
    deadline = time.monotonic() + timeout
    while True:
      listed = self.command("sacct", "-j", job_id, "--duplicates", "--allocations",
                            "--noheader", "--parsable2", "--format=State,ExitCode")
      runs = [tuple(line.split("|")) for line in listed.splitlines()]
      if runs and runs[-1][0] not in ("PENDING", "RUNNING", "COMPLETING") or (
          time.monotonic() > deadline):
        return runs
      time.sleep(0.3)

  def idle(self):
    """Whether the node runs nothing, the last job's step daemons gone too."""
    return self.command("sinfo", "--noheader", "--format=%T").split() == ["idle"]

  def explain(self, job_id, fields, output, lines=30):
    """Why a job is where it is: its state, the end of what it printed, and the lines of
    slurmctld's and slurmd's logs that name it."""
    found = [f"{k}={fields.get(k)}\n" for k in ("JobState", "Reason", "Restarts", "ExitCode")]
    with contextlib.suppress(OSError):
      with open(output) as f:
        found += [line for line in f.readlines()[-lines:] if "basic_session_run_hooks" not in line]
    for daemon in ("slurmctld", "slurmd"):
      with contextlib.suppress(OSError):
        with open(os.path.join(self.root, f"{daemon}.log")) as f:
          found += [f"{daemon}: {line}" for line in f if re.search(rf"\b{job_id}\b", line)][-lines:]
    return "".join(found)

  def job(self, job_id):
    """scontrol's fields of the job (JobState, ExitCode, Restarts, ...)."""
    shown = self.command("scontrol", "--oneliner", "show", "job", job_id)
    return dict(re.findall(r"(\w+)=(\S*)", shown))

  def wait(self, job_id, *, states=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                    "NODE_FAIL", "OUT_OF_MEMORY"), timeout=300):
    """Polls the job until it is in one of `states`; its fields."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      fields = self.job(job_id)
      if fields["JobState"] in states:
        return fields
      time.sleep(0.3)
    self.command("scancel", job_id, check=False)
    try:  # What the job printed: where it was when the test gave up on it.
      with open(self._outputs.get(job_id, ""), errors="replace") as f:
        printed = f.read()[-6000:]
    except OSError:
      printed = "(no output)"
    pytest.fail(f"job {job_id} is {fields['JobState']} after {timeout}s, not one of "
                f"{states}; it printed:\n{printed}")


def _check_can_run():
  if os.geteuid() != 0:
    pytest.skip("a real SLURM cluster needs root (munged, slurmd)")
  missing = [d for d in DAEMONS if not shutil.which(d)]
  if missing:
    pytest.skip(f"SLURM is not installed ({', '.join(missing)} missing; make setup installs "
                "Debian's slurmctld slurmd slurm-client munge as root)")
  # One name a call: pgrep matches nothing with a pattern of over 15 characters.
  if any(subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0
         for name in ("slurmctld", "slurmd", "slurmdbd")):
    pytest.skip("another slurmctld, slurmd or slurmdbd runs on this machine; this test starts "
                "its own")


def _start(root, env):
  os.makedirs(os.path.join(root, "munge"))
  os.chmod(root, 0o711)
  os.chmod(os.path.join(root, "munge"), 0o711)  # Clients reach the socket through it.
  for name in ("state", "spool"):
    os.makedirs(os.path.join(root, name))
  key = os.path.join(root, "munge.key")
  subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True, env=env,
                 capture_output=True)
  os.chmod(key, 0o600)
  subprocess.run(["munged", f"--key-file={key}", f"--socket={root}/munge/socket",
                  f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log",
                  f"--seed-file={root}/munged.seed", "--force"],
                 check=True, env=env, capture_output=True)
  ctld_port, slurmd_port, dbd_port, db_port = local_cluster.free_ports(4)
  with open(env["SLURM_CONF"], "w") as f:
    f.write(_CONF.format(root=root, cpus=CPUS, ctld_port=ctld_port, slurmd_port=slurmd_port,
                         dbd_port=dbd_port))
  _start_accounting(root, env, dbd_port=dbd_port, db_port=db_port)
  for daemon in ("slurmctld", "slurmd"):
    subprocess.run([daemon, "-f", env["SLURM_CONF"]], check=True, env=env,
                   capture_output=True)
  deadline = time.monotonic() + 30
  while time.monotonic() < deadline:
    states = subprocess.run(["sinfo", "--noheader", "--format=%T"], env=env,
                            capture_output=True, text=True).stdout.split()
    if states == ["idle"]:
      return
    time.sleep(0.1)
  raise AssertionError(f"the SLURM node is {states}, not idle, after 30 s; see {root}/*.log")


def _start_accounting(root, env, *, dbd_port, db_port):
  """MariaDB (its own data directory, socket and port) and slurmdbd, which slurmctld
  records every job run in."""
  data = os.path.join(root, "db")
  subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                  "--auth-root-authentication-method=normal", "--skip-test-db",
                  "--skip-name-resolve", "--innodb-log-file-size=8M"],
                 check=True, env=env, capture_output=True, timeout=120)
  subprocess.Popen(
      ["mariadbd", "--no-defaults", f"--datadir={data}", "--user=root",
       f"--socket={root}/mysql.sock", f"--port={db_port}", "--bind-address=127.0.0.1",
       f"--pid-file={root}/mariadb.pid", f"--log-error={root}/mariadb.err",
       "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M", "--skip-name-resolve"],
      env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
      start_new_session=True)
  _until(lambda: subprocess.run(
      ["mariadb", "--no-defaults", "-uroot", f"--socket={root}/mysql.sock", "-e", "select 1"],
      capture_output=True, env=env).returncode == 0, "MariaDB answers", root)
  conf = os.path.join(root, "slurmdbd.conf")  # Beside slurm.conf, root's and 0600.
  with open(os.open(conf, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
    f.write(_DBD_CONF.format(root=root, dbd_port=dbd_port, db_port=db_port))
  subprocess.run(["slurmdbd"], check=True, env=env, capture_output=True, timeout=60)
  _until(lambda: subprocess.run(["sacctmgr", "--noheader", "list", "cluster"],
                                capture_output=True, env=env, timeout=30).returncode == 0,
         "slurmdbd answers", root)


def _until(done, what, root, timeout=30):
  deadline = time.monotonic() + timeout
  while not done():
    if time.monotonic() > deadline:
      raise AssertionError(f"{what} not within {timeout} s; see the logs in {root}")
    time.sleep(0.1)


def _processes_of(conf):
  """The daemons, step daemons and job processes of the cluster whose config is `conf`."""
  found = []
  for p in psutil.process_iter():
    with contextlib.suppress(psutil.Error):
      if p.environ().get("SLURM_CONF") == conf and p.status() != psutil.STATUS_ZOMBIE:
        found.append(p)
  return found


def _stop(root, env):
  """Cancels every job and stops the daemons; kills whatever of the cluster is left."""
  for command in (["scancel", "--full", "--user=root"], ["scontrol", "shutdown"]):
    with contextlib.suppress(subprocess.SubprocessError, OSError):
      subprocess.run(command, env=env, capture_output=True, timeout=30)
  for daemon in ("slurmdbd", "mariadb", "munged"):
    with contextlib.suppress(OSError, ValueError):
      with open(os.path.join(root, f"{daemon}.pid")) as f:
        os.kill(int(f.read()), signal.SIGTERM)
  _, alive = psutil.wait_procs(_processes_of(env["SLURM_CONF"]), timeout=15)
  for p in alive:
    with contextlib.suppress(psutil.Error):
      p.kill()


@contextlib.contextmanager
def running():
  """Yields a started `Cluster`; stops its daemons and jobs even when a test fails."""
  _check_can_run()
  root = tempfile.mkdtemp(prefix="estimator_dist_slurm_")
  env = {k: v for k, v in os.environ.items() if k not in (helpers.TOKEN_VAR, env_vars.NO_RESTART)}
  env["SLURM_CONF"] = os.path.join(root, "slurm.conf")
  try:
    _start(root, env)
    yield Cluster(root)
  finally:
    _stop(root, env)
    shutil.rmtree(root, ignore_errors=True)
