"""A private network and process namespace for the tasks of a local job.

TensorFlow's, Gloo's and MPI's servers have no authentication: on a shared host any
local user who can reach a port can run operations in the job. The tasks of a local job
therefore run in a network namespace of their own, whose loopback interface no process
outside the job can reach, and in a PID namespace of their own, whose every process the
kernel kills when its first process dies. That process is a child of the launcher that
dies with it, so nothing of the job outlives the launcher, whatever killed it.

Root makes the namespaces directly; another user makes them inside a user namespace
(`unshare --map-root-user`), where the tasks run as that user.
"""

import os
import subprocess
import sys

import psutil

from estimator_dist import errors
from estimator_dist.supervision import namespace_holder

ISOLATIONS = ("auto", "private", "host")

# A signal sent to every process of the job (systemctl stop, pkill, a container runtime)
# must reach the programs, whose handlers save the work, and not end the processes that
# hold the job together first: the namespaces' first process and each task's nsenter
# ignore the preemption signals, and every program gets their default back.
_PREEMPTION_SIGNALS = "TERM,USR1"
_SURVIVES_PREEMPTION = ["env", f"--ignore-signal={_PREEMPTION_SIGNALS}"]
_DEFAULT_SIGNALS = ["env", f"--default-signal={_PREEMPTION_SIGNALS}"]


class Sandbox:
  """The namespaces of one job; `command(c)` runs `c` inside them."""

  def __init__(self, holder, init_pid, user_namespace):
    self._holder = holder
    self.init_pid = init_pid
    self._user_namespace = user_namespace

  def command(self, command):
    user = ["--user", "--preserve-credentials"] if self._user_namespace else []
    return [*_SURVIVES_PREEMPTION, "nsenter", "-t", str(self.init_pid), *user, "--net",
            "--pid", "--", *_DEFAULT_SIGNALS, *command]

  def close(self):
    """Ends the namespaces: the kernel kills every process left in them."""
    if self._holder.poll() is None:
      self._holder.kill()
    self._holder.wait()


def describe(sandbox):
  """The launcher's first line about who can reach the job."""
  if sandbox:
    return ("isolation: private (the tasks run in their own network and process namespaces: "
            "no process outside the job can reach their ports, and they end with the launcher)")
  return ("isolation: host network (the tasks listen on loopback, where any local user can "
          "reach them; --isolation=private keeps them private)")


def open_sandbox(isolation, preexec_fn=None):
  """A Sandbox for `isolation`, or None for the host network.

  "private" raises ConfigError where namespaces cannot be made; "auto" returns None
  there and `why` says why. Returns (sandbox, why).
  """
  errors.check_choice("isolation", isolation, ISOLATIONS)
  if isolation == "host":
    return None, None
  user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
  # The namespaces' first process: brings loopback up, says so, and waits to be killed.
  # The holder imports only the standard library: started as a file, without site (-I -S).
  command = [*_SURVIVES_PREEMPTION, "unshare", *user, "--net", "--pid", "--fork", "--kill-child",
             sys.executable, "-I", "-S", os.path.abspath(namespace_holder.__file__)]
  try:
    holder = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, preexec_fn=preexec_fn)
    ready = holder.stdout.readline().strip() == "ready"
  except OSError as e:
    holder, ready, why = None, False, str(e)
  if ready:
    init_pid = psutil.Process(holder.pid).children()[0].pid  # unshare forked it.
    return Sandbox(holder, init_pid, user_namespace=bool(user)), None
  if holder is not None:
    holder.kill()
    why = holder.communicate()[1].strip().splitlines()[-1:] or ["it exited"]
    why = why[0]
  if isolation == "private":
    raise errors.ConfigError(
        f"--isolation=private: this machine cannot give the job its own namespaces "
        f"(`{' '.join(command[2:8])}` failed: {why}). Allow unprivileged user namespaces "
        f"(sysctl kernel.unprivileged_userns_clone=1) or run as root, or pass "
        f"--isolation=host to run on the host network.")
  return None, why
