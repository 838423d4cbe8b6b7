"""A sweep's fork server: TensorFlow imported once, each trial's task forked from it.

A sweep runs many short jobs of one program, and each of their tasks would spend 2 to 3 s
importing TensorFlow before its first step; PBT's segments pay it every generation.
`estimator-dist sweep` runs one fork server (`forkserver_process`) for its local trials,
from their first trial on (`started`). Their launchers start each task as a small client
in the job's namespaces (`client_command`, `forkserver_client.py`), which hands the server
its command, environment, working directory, CPUs, umask and standard streams. The server
forks the task into the client's network and PID namespaces, where it runs the program as
`python` would, with TensorFlow already imported. The client ends with the task's exit
status, and the task dies with the client and with the job's namespaces. The server
records which task it forked for which client, so the launcher counts the task among the
client's processes (`with_forked_tasks`): its signals, stops, CPU time and shared memory
reach the task. What a fork would not run as the command itself starts as its command
(forkserver_process).
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

from estimator_dist import command_line
from estimator_dist.contract import bind_address
from estimator_dist.contract import env_vars
from estimator_dist.contract import process_identity
from estimator_dist.jobs import job_dirs
from estimator_dist.jobs import process_tree

CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forkserver_client.py")
LOG_NAME = "forkserver.log"
TASKS = "tasks"  # Beside the socket: a file per client, named by its pid, holding its task's.
_READY_SECS = 60


def runs_here(command, env=os.environ):
  """Whether `command` runs this interpreter (the one the fork server runs)."""
  executable = len(command) > 1 and shutil.which(command[0], path=env.get("PATH"))
  return bool(executable) and os.path.abspath(executable) == sys.executable


def client_command(command, env):
  """`command` started through the fork server `env` names, where there is one and the
  command runs this interpreter (the launcher's); else `command` itself. The client gets
  the server's socket and the prefix of its lines as its first arguments."""
  if not env.get(env_vars.FORKSERVER) or not runs_here(command, env):
    return command
  return [sys.executable, "-I", "-S", CLIENT, env[env_vars.FORKSERVER], command_line.line(""),
          *command]


def with_forked_tasks(family, table, *, socket_path):
  """`family` (pids) with the tasks that the fork server at `socket_path` (None: none)
  forked for the clients among them, and their descendants (`table`:
  process_tree.process_table()): a task's processes are its client's."""
  if not socket_path:
    return family
  directory = os.path.join(os.path.dirname(socket_path), TASKS)
  for client in list(family):
    with contextlib.suppress(OSError, ValueError):
      with open(os.path.join(directory, str(client))) as f:
        identity = json.load(f)
      task = int(identity.partition(":")[0])
      if process_identity.launcher_identity(task) == identity:  # Not a reused pid.
        family = family | {task, *process_tree.descendants(task, table)}
  return family


class ForkServer:
  """A fork server for the local jobs this process starts with `env`, started by the
  first job that asks for it (`variables`); its lines go to `log_dir`/forkserver.log.
  It runs in `cwd` (default: this process's), where its code is found first."""

  def __init__(self, log_dir, env, cwd=None):
    self._log_dir, self._env, self._cwd = log_dir, env, cwd
    self._process = self._directory = self._path = None

  def variables(self):
    """The variables a launcher needs to fork its tasks from it, once it is ready: it
    imports TensorFlow first, which the tasks it would start as their command meanwhile
    would do too, on the same CPUs. None ({}) where it ended or was not ready within a
    minute."""
    if self._process is None:
      self._start()
    while not os.path.exists(self._path):
      if self._process.poll() is not None or time.monotonic() > self._deadline:
        return {}
      time.sleep(0.05)
    return {env_vars.FORKSERVER: self._path}

  def _start(self):
    self._directory = job_dirs.make("forkserver")  # 0700; removed by a later launch if left.
    self._path = os.path.join(self._directory, "socket")
    self._deadline = time.monotonic() + _READY_SECS
    env = task_env(self._env)
    env.pop(env_vars.FORKSERVER, None)
    with open(os.path.join(self._log_dir, LOG_NAME), "ab") as log:
      self._process = subprocess.Popen(
          [sys.executable, "-m", "estimator_dist.jobs.forkserver_process", self._path],
          env=env, cwd=self._cwd, stdin=subprocess.DEVNULL, stdout=log,
          stderr=subprocess.STDOUT, start_new_session=True,
          preexec_fn=process_tree.die_with_parent)

  def close(self):
    """Ends it; the tasks it forked go on, each until its client ends."""
    if self._process is not None:
      self._process.kill()
      self._process.wait()
      shutil.rmtree(self._directory, ignore_errors=True)


@contextlib.contextmanager
def started(log_dir, *, env=None, cwd=None):
  """A ForkServer for the local jobs this process starts with `env` (its own by default),
  ended on the way out (and dying with this process)."""
  server = ForkServer(log_dir, os.environ if env is None else env, cwd)
  try:
    yield server
  finally:
    server.close()


def task_env(env):
  """What Python and TensorFlow read as they start, as a local job's task started with `env`
  reads it: unbuffered, with the library that keeps its binds local."""
  return bind_address.local_only_env({**env, "PYTHONUNBUFFERED": "1"})


