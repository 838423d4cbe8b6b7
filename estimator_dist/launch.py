"""Starts a training program as a local multi-process cluster.

  python -m estimator_dist.launch --strategy=parameter_server --num_workers=2 \\
      --num_ps=1 --evaluator -- python -m model_zoo.mnist_cnn --train_steps=300

For tf.distribute strategies every task is a process with its own TF_CONFIG on free
ports of 127.0.0.1; for Horovod the program runs under `horovodrun` (MPI when Horovod
was built with it, else Gloo), on this machine or on the hosts given with --hosts or
--hostfile. Output lines are prefixed with the task (`[worker:1]`).
When a task fails the others are stopped and the launcher exits with that task's code;
Ctrl-C stops everything.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from absl import app
from absl import flags

from estimator_dist import errors
from estimator_dist import cluster as cluster_lib
from estimator_dist import horovodrun
from estimator_dist import loopback
from estimator_dist import summary
from estimator_dist.strategies import factory

# horovodrun's line tags: "[1]<stdout>:" under Gloo, "[1,1]<stdout>:" under MPI.
_HOROVOD_LINE = re.compile(r"^\[(?:\d+,)?(\d+)\]<std(?:out|err)>:(.*)$")


def define_flags():
  flags.DEFINE_enum("strategy", "multi_worker", factory.STRATEGIES + tuple(factory.ALIASES),
                    "Distribution strategy; passed to the program as --strategy.")
  flags.DEFINE_integer("num_workers", 2, "Training processes (mirrored: replicas).",
                       lower_bound=1)
  flags.DEFINE_integer("num_ps", None, "parameter_server: ps tasks (default 1).", lower_bound=0)
  flags.DEFINE_bool("evaluator", False, "multi_worker, parameter_server: add an evaluator.")
  flags.DEFINE_string("model_dir", None, "Passed to the program as --model_dir unless its "
                      "arguments have one (default: a new temporary directory).")
  flags.DEFINE_string("host", "127.0.0.1", "Address the tasks of a local job bind to.")
  flags.DEFINE_enum("horovod_controller", "auto", horovodrun.CONTROLLERS,
                    "horovod: how horovodrun connects the ranks; auto picks MPI when Horovod "
                    "was built with it (shared memory between ranks of one host), else Gloo.")
  flags.DEFINE_string("hosts", None, "horovod: machines and their slots, host1:2,host2:2 "
                      "(default: all ranks on 127.0.0.1).")
  flags.DEFINE_string("hostfile", None, "horovod: a horovodrun hostfile, one 'host slots=N' "
                      "line per machine.")
  flags.DEFINE_string("network_interface", None, "horovod on several hosts: the interface of "
                      "their private network, which Gloo and MPI bind to (e.g. eth1).")
  flags.DEFINE_string("horovodrun_args", "", "horovod: more horovodrun options, passed as "
                      "they are, e.g. '--fusion-threshold-mb=32 --cycle-time-ms=2'.")
  flags.DEFINE_integer("shutdown_timeout_secs", 300,
                       "After training ends, seconds ps and evaluator tasks get to exit.",
                       lower_bound=1)


def free_ports(count, host="127.0.0.1"):
  """`count` distinct ports free on `host` (held open together while chosen)."""
  sockets = []
  try:
    for _ in range(count):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.bind((host, 0))
      sockets.append(s)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def local_cluster(strategy, num_workers, num_ps=0, evaluator=False, host="127.0.0.1"):
  """The cluster of a local tf.distribute job: chief, workers, ps and evaluator."""
  roles = [("chief", 1), ("worker", num_workers - 1), ("ps", num_ps),
           ("evaluator", 1 if evaluator else 0)]
  ports = iter(free_ports(sum(n for _, n in roles), host))
  return {role: tuple(f"{host}:{next(ports)}" for _ in range(n)) for role, n in roles if n}


def default_num_ps(strategy, num_ps):
  """`num_ps`, or 1 for parameter_server and 0 for the others when it is None."""
  if num_ps is None:
    return 1 if strategy == "parameter_server" else 0
  return num_ps


def check_command(command):
  if not command:
    raise errors.ConfigError(
        "give the program to run after --, e.g. -- python -m model_zoo.mnist_cnn")


def check_topology(strategy, num_workers, num_ps, evaluator):
  """Raises ValueError for a launch that the strategy cannot run."""
  if strategy == "parameter_server" and num_ps == 0:
    raise errors.ConfigError("--strategy=parameter_server needs --num_ps of at least 1.")
  if strategy != "parameter_server" and num_ps:
    raise errors.ConfigError(f"--num_ps={num_ps} applies only to --strategy=parameter_server.")
  if evaluator and strategy not in ("multi_worker", "parameter_server"):
    raise errors.ConfigError(
        f"--evaluator applies to multi_worker and parameter_server, not {strategy}.")
  if strategy == "local" and num_workers != 1:
    raise errors.ConfigError("--strategy=local trains in one process; use --num_workers=1.")


class Task:
  """One child process; its output is copied line by line with a prefix."""

  def __init__(self, name, command, env, out):
    self.name = name
    self.summaries = []
    self.process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent)
    self._thread = threading.Thread(target=self._copy, args=(out,), daemon=True)
    self._thread.start()

  def _copy(self, out):
    for raw in iter(self.process.stdout.readline, b""):
      line = raw.decode("utf-8", "replace").rstrip("\n")
      match = _HOROVOD_LINE.match(line)
      prefix = f"[worker:{match.group(1)}]" if match else f"[{self.name}]"
      text = match.group(2) if match else line
      fields = summary.parse_line(text)
      if fields:
        self.summaries.append(fields)
      out.write(f"{prefix} {text}\n")
      out.flush()

  def stop(self, grace_secs=10):
    """SIGTERM to the task's processes, SIGKILL after `grace_secs`.

    The task's processes are its process group and every descendant, found before
    any is signalled (mpirun starts its ranks in process groups of their own).
    """
    family = _descendants(self.process.pid)
    for sig, wait in ((signal.SIGTERM, grace_secs), (signal.SIGKILL, 5)):
      if self.process.poll() is not None and not _alive(family):
        break
      _signal_all(self.process.pid, family, sig)
      try:
        self.process.wait(wait)
      except subprocess.TimeoutExpired:
        pass
      deadline = time.monotonic() + wait
      while _alive(family) and time.monotonic() < deadline:
        time.sleep(0.1)
    _signal_all(self.process.pid, family, signal.SIGKILL)  # Anything left goes too.
    self._thread.join(5)


def _signal_all(group, pids, sig):
  for kill, target in [(os.killpg, group)] + [(os.kill, pid) for pid in pids]:
    try:
      kill(target, sig)
    except (ProcessLookupError, PermissionError):
      pass


def _alive(pids):
  alive = []
  for pid in pids:
    try:
      with open(f"/proc/{pid}/stat") as f:
        if f.read().rsplit(")", 1)[1].split()[0] != "Z":
          alive.append(pid)
    except (OSError, IndexError):
      pass
  return alive


def _descendants(pid):
  """The pids of every process descended from `pid` (Linux /proc)."""
  children = {}
  for entry in os.listdir("/proc"):
    if entry.isdigit():
      try:
        with open(f"/proc/{entry}/stat") as f:
          parent = int(f.read().rsplit(")", 1)[1].split()[1])
      except (OSError, ValueError, IndexError):
        continue
      children.setdefault(parent, []).append(int(entry))
  found, todo = [], [pid]
  while todo:
    for child in children.get(todo.pop(), []):
      found.append(child)
      todo.append(child)
  return found


def die_with_parent():
  """Linux: the child gets SIGKILL if the launcher dies without cleaning up."""
  try:
    import ctypes  # pylint: disable=g-import-not-at-top
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
  except OSError:
    pass


def _exit_code(returncode):
  return 128 - returncode if returncode < 0 else returncode


class Launcher:
  """Starts the tasks, watches them, and stops them all on failure or signal."""

  def __init__(self, out=sys.stdout):
    self.out = out
    self.tasks = []

  def log(self, message):
    self.out.write(f"[launch] {message}\n")
    self.out.flush()

  def start(self, name, command, env):
    self.tasks.append(Task(name, command, env, self.out))

  def stop_all(self):
    for task in self.tasks:
      task.stop()

  def wait(self, training, shutdown_timeout_secs):
    """Waits for the `training` tasks; returns the exit code of the job."""
    deadline = None
    while True:
      for task in self.tasks:
        code = task.process.poll()
        if code not in (None, 0):
          self.log(f"{task.name} exited with code {code}; stopping the other tasks")
          self.stop_all()
          return _exit_code(code)
      running = [t for t in self.tasks if t.process.poll() is None]
      if not running:
        return 0
      if not any(t.name in training for t in running):
        deadline = deadline or time.monotonic() + shutdown_timeout_secs
        if time.monotonic() > deadline:
          names = ", ".join(t.name for t in running)
          self.log(f"training ended but {names} did not exit within "
                   f"{shutdown_timeout_secs}s; stopping them")
          self.stop_all()
          return 1
      time.sleep(0.2)


def child_env(**extra):
  """The environment of a task: this one without TF_CONFIG, unbuffered, plus `extra`."""
  env = dict(os.environ)
  env.pop("TF_CONFIG", None)
  env["PYTHONUNBUFFERED"] = "1"
  env.update({k: v for k, v in extra.items() if v is not None})
  return env


def _horovodrun_env():
  # mpirun tags every write, not every line, and an unbuffered print writes each of
  # its arguments on its own; buffered, a flushed print or log record is one write.
  env = child_env()
  env.pop("PYTHONUNBUFFERED")
  return env


def launch(command, strategy, num_workers, num_ps=None, evaluator=False, model_dir=None,
           host="127.0.0.1", shutdown_timeout_secs=300, out=sys.stdout,
           horovod_controller="auto", hosts=None, hostfile=None, network_interface=None,
           horovodrun_args=""):
  """Runs `command` as a job; returns its exit code.

  Every strategy runs on this machine, except horovod given `hosts` or `hostfile`.
  """
  strategy = factory.ALIASES.get(strategy, strategy)
  num_ps = default_num_ps(strategy, num_ps)
  check_topology(strategy, num_workers, num_ps, evaluator)
  check_command(command)
  if strategy != "horovod" and (hosts or hostfile or horovodrun_args):
    raise errors.ConfigError(
        f"--hosts, --hostfile and --horovodrun_args apply to --strategy=horovod; "
        f"{strategy} on several machines starts from TF_CONFIG (see `estimator-dist k8s` "
        f"and `estimator-dist slurm`) or estimator_dist.spark.run.")
  command = list(command) + [f"--strategy={strategy}"]
  if not any(a.startswith("--model_dir") for a in command):
    model_dir = model_dir or tempfile.mkdtemp(prefix="estimator_dist_")
    command.append(f"--model_dir={model_dir}")
  launcher = Launcher(out)
  launcher.log(f"strategy={strategy} workers={num_workers} model_dir={model_dir}")
  # A job on this machine alone listens on loopback only (see estimator_dist.loopback).
  local = horovodrun.is_loopback(host) and (strategy != "horovod" or all(
      horovodrun.is_loopback(h) for h, _ in horovodrun.machines(num_workers, hosts, hostfile)))
  env_of = loopback.local_only_env if local else lambda env: env

  def on_signal(signum, _):
    launcher.log(f"signal {signum}: stopping all tasks")
    launcher.stop_all()
    sys.exit(128 + signum)
  previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
  try:
    if strategy == "horovod":
      launcher.start("horovodrun",
                     horovodrun.command(command, num_workers, hosts, hostfile,
                                        network_interface, horovod_controller,
                                        horovodrun_args),
                     env_of(_horovodrun_env()))
      training = {"horovodrun"}
    elif strategy in ("local", "mirrored"):
      devices = str(num_workers) if strategy == "mirrored" else None
      launcher.start("chief:0", command,
                     env_of(child_env(**{cluster_lib.NUM_DEVICES_ENV: devices})))
      training = {"chief:0"}
    else:
      cluster = local_cluster(strategy, num_workers, num_ps, evaluator, host)
      training = set()
      for role, addresses in cluster.items():
        for index in range(len(addresses)):
          name = f"{role}:{index}"
          if role in cluster_lib.TRAINING_ROLES:
            training.add(name)
          launcher.start(name, command, env_of(
              child_env(TF_CONFIG=cluster_lib.tf_config(cluster, role, index))))
    code = launcher.wait(training, shutdown_timeout_secs)
    launcher.log(f"job {'finished' if code == 0 else 'failed'} with exit code {code}")
    for fields in (f for t in launcher.tasks for f in t.summaries):
      launcher.log("summary\n" + summary.format_table(fields))
    return code
  finally:
    launcher.stop_all()
    for s, handler in previous.items():
      signal.signal(s, handler)


def main(argv):
  f = flags.FLAGS
  try:
    return launch(argv[1:], f.strategy, f.num_workers, f.num_ps, f.evaluator, f.model_dir,
                  f.host, f.shutdown_timeout_secs, horovod_controller=f.horovod_controller,
                  hosts=f.hosts, hostfile=f.hostfile, network_interface=f.network_interface,
                  horovodrun_args=f.horovodrun_args)
  except errors.ConfigError as e:
    sys.stderr.write(f"estimator_dist.launch: {e}\n")
    return 2


def run():
  define_flags()
  app.run(main)


if __name__ == "__main__":
  run()
