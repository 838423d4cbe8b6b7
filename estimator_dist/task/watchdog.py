"""A companion process of every task that ends it when it cannot go on, from its start.

A process, not a thread: while TensorFlow waits for a peer it holds the interpreter
lock, and it catches SIGTERM. The companion (`watchdog_companion`, run by its file with
-S) runs only the standard library, reads the task's phases from a pipe (and ends when
the task does), and kills the task with SIGKILL, after printing why, when:

- **startup**: a training task has not reached its first step within the startup
  timeout (`env_vars.STARTUP_TIMEOUT_SECS`, default 120 s; the launcher's
  --startup_timeout_secs sets it). The message names the phase (started; cluster
  reached, once every peer's port answers, which the companion probes every second;
  session created) and the peers that do not answer. This holds for a program started by hand
  with TF_CONFIG as for one the launcher started;
- **lifeline**: the launcher that started the task is gone, however it died.

Until the first step it also beats the task's heartbeat file every second, unless the
task is stopped, so the launcher notices a task stopped right after it started; from the
first step on, `training.hooks.HeartbeatHook` beats once per step.
"""

import json
import os
import subprocess
import sys
import threading

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import task_env
from estimator_dist.task import watchdog_companion

PHASES = watchdog_companion.PHASES
_lock = threading.Lock()
_companion = None
_phase = PHASES[0]
_beat = None  # This task's heartbeat file (heartbeat.path_of), once started.


def _peers(task):
  """[(name, address)] of the other tasks this one talks to (not the evaluator)."""
  own = task.cluster.get(task.role, ())[task.index:task.index + 1]
  return [(f"{role}:{i}", address) for role, addresses in task.cluster.items()
          if role != "evaluator" for i, address in enumerate(addresses)
          if address not in own]


def start(task, env=None):
  """Starts the companion of this process's `task`, once.

  A process alone, not started by the launcher, has no peer to wait for: none.
  """
  global _companion, _beat
  env = os.environ if env is None else env
  if not (task.cluster or task.size > 1 or env.get(env_vars.LAUNCHER)):
    return
  timeout = env.get(env_vars.STARTUP_TIMEOUT_SECS, str(task_env.DEFAULT_STARTUP_TIMEOUT_SECS))
  try:
    timeout = float(timeout)
  except ValueError:
    raise errors.ConfigError(f"{env_vars.STARTUP_TIMEOUT_SECS} is {timeout!r}: it must be "
                             f"a number of seconds.") from None
  with _lock:
    if _companion is not None:
      return
    training, _beat = task.is_training, heartbeat.path_of(task, env)
    _companion = subprocess.Popen(
        [sys.executable, "-S", watchdog_companion.__file__, task.name,
         str(timeout if training else 0), env.get(env_vars.LAUNCHER, ""),
         _beat or "", json.dumps(_peers(task)),
         command_line.error_line("")],
        stdin=subprocess.PIPE, text=True, close_fds=True)


def reached(phase):
  """Records that this task reached `phase` (one of PHASES). At "ended", a heartbeat no
  hook marked ended (nothing was left to train) is marked here, before the task goes on."""
  global _phase
  if PHASES.index(phase) <= PHASES.index(_phase) or _companion is None:
    return
  _phase = phase
  if phase == PHASES[-1] and _beat and not os.path.exists(_beat + ".ended"):
    try:
      heartbeat.end(_beat)
    except OSError:
      pass  # The launcher's directory, full or gone: its own checks say so.
  _tell(phase)


def new_round():
  """A later train() of the program (its first one trained): the companion beats again,
  and bounds the round's start (session, restore, input warm-up) by the startup timeout,
  as it did the first's, until its first step."""
  global _phase
  if _companion is not None and PHASES.index(_phase) >= PHASES.index("training"):
    _phase = "cluster reached"
    _tell(watchdog_companion.NEW_ROUND)


def _tell(line):
  try:
    _companion.stdin.write(line + "\n")
    _companion.stdin.flush()
  except (BrokenPipeError, ValueError):
    pass
