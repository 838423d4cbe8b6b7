"""A thread in every task that ends it when it cannot go on, from the moment it starts.

- **Startup.** A training task goes through phases: started, session created, training
  (its first step). One that has not reached training within the startup timeout
  (`ESTIMATOR_DIST_STARTUP_TIMEOUT_SECS`, default 120 s; the launcher's
  --startup_timeout_secs sets it) names its phase and the peers that do not answer,
  and exits with STALLED_EXIT_CODE. This holds for a program started by hand with
  TF_CONFIG as for one the launcher started.
- **Heartbeats.** Until training starts, the thread touches the task's heartbeat file
  every second, so a task stopped right after it started is noticed by the launcher;
  from the first step on, `guards.HeartbeatHook` beats once per step.
- **Lifeline.** A task started by the launcher exits when the launcher is gone, however
  it died (its children, such as MPI ranks, are not its children).
"""

import os
import socket
import sys
import threading
import time

from absl import logging

from estimator_dist import errors
from estimator_dist.task import heartbeat

STARTUP_TIMEOUT_ENV = "ESTIMATOR_DIST_STARTUP_TIMEOUT_SECS"
LAUNCHER_ENV = "ESTIMATOR_DIST_LAUNCHER"  # "pid:start time" of the launcher.
DEFAULT_STARTUP_TIMEOUT_SECS = 120
PHASES = ("started", "session created", "training")
_POLL_SECS = 0.5
_lock = threading.Lock()
_current = None


def launcher_identity(pid=None):
  """"pid:start time" of a process (this one by default), as the lifeline checks it."""
  pid = os.getpid() if pid is None else pid
  return f"{pid}:{_start_time(pid)}"


def _start_time(pid):
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[19]
  except (OSError, IndexError):
    return None


def start(task, env=None):
  """Starts the watchdog of this process's `task` (once); returns it."""
  global _current
  env = os.environ if env is None else env
  with _lock:
    if _current is None:
      timeout = env.get(STARTUP_TIMEOUT_ENV, str(DEFAULT_STARTUP_TIMEOUT_SECS))
      try:
        timeout = float(timeout)
      except ValueError:
        raise errors.ConfigError(f"{STARTUP_TIMEOUT_ENV} is {timeout!r}: it must be a "
                                 f"number of seconds.") from None
      _current = Watchdog(task, timeout, env.get(LAUNCHER_ENV),
                          heartbeat.path_of(task, env))
      _current.begin()
    return _current


def reached(phase):
  """Records that this task reached `phase` (one of PHASES)."""
  if _current is not None:
    _current.reached(phase)


class Watchdog:
  """See the module's docstring."""

  def __init__(self, task, startup_timeout_secs, launcher, heartbeat_path):
    self.task = task
    self.startup_timeout_secs = startup_timeout_secs
    self._launcher = launcher
    self._heartbeat = heartbeat_path if task.is_training else None
    self.phase, self._since = PHASES[0], time.monotonic()
    self._started = self._since

  def begin(self):
    threading.Thread(target=self._watch, name="estimator_dist_watchdog", daemon=True).start()

  def reached(self, phase):
    if PHASES.index(phase) > PHASES.index(self.phase):
      self.phase, self._since = phase, time.monotonic()

  def _watch(self):
    while True:
      if self._launcher and not self._launcher_alive():
        self._exit(f"its launcher (pid {self._launcher.split(':')[0]}) is gone; exiting")
      if self.phase != "training":
        if self._heartbeat:
          heartbeat.beat(self._heartbeat)
        waited = time.monotonic() - self._started
        if self.task.is_training and self.startup_timeout_secs and (
            waited > self.startup_timeout_secs):
          self._exit(self.stalled_message(waited))
      time.sleep(_POLL_SECS)

  def _launcher_alive(self):
    pid, _, start_time = self._launcher.partition(":")
    return _start_time(pid) == start_time

  def stalled_message(self, waited):
    task = self.task
    silent = [f"{name} at {address}" for name, address in _peers(task)
              if not _answers(address)]
    waiting = (f"for {', '.join(silent)} (no answer)" if silent else
               "although every peer answers (one of them may be stuck)" if _peers(task) else
               "with no peer")
    return (f"{task.role}:{task.index} has waited {waited:.0f} s in phase "
            f"'{self.phase}' {waiting}; it did not start training within the startup "
            f"timeout of {self.startup_timeout_secs:g} s ({STARTUP_TIMEOUT_ENV}; launcher: "
            f"--startup_timeout_secs). Check that every task of the cluster runs and can "
            f"reach the others.")

  def _exit(self, message):
    logging.error("estimator_dist: %s", message)
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    os._exit(errors.STALLED_EXIT_CODE)  # pylint: disable=protected-access


def _peers(task):
  """[(name, address)] of the other tasks this one talks to (not the evaluator)."""
  own = task.cluster.get(task.role, ())[task.index:task.index + 1]
  return [(f"{role}:{i}", address) for role, addresses in task.cluster.items()
          if role != "evaluator" for i, address in enumerate(addresses)
          if address not in own]


def _answers(address, timeout=1.0):
  host, _, port = address.rpartition(":")
  try:
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
      return True
  except (OSError, ValueError):
    return False
