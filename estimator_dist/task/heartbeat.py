"""Heartbeats: a training task that stops making progress is noticed, not waited for.

When the launcher sets `env_vars.HEARTBEAT_DIR`, every training task touches a file
named after itself there about once a second from the moment it starts (the watchdog
thread until the first step, then `training.hooks.HeartbeatHook` once per step), and marks it
ended when its training ends. A file that has not been touched for --hang_timeout_secs means the task
is stuck (stopped, deadlocked, waiting on a peer that is), and the launcher stops the job.
The training side is `watchdog` and `training.hooks.HeartbeatHook`.
"""

import os
import time

from estimator_dist.task import env_vars

_ENDED = ".ended"


def path_of(task, env):
  """The heartbeat file of a training `task`; None when the launcher asked for none."""
  directory = env.get(env_vars.HEARTBEAT_DIR)
  if not directory or not task.is_training:
    return None
  return os.path.join(directory, f"{task.role}:{task.index}")


def beat(path):
  with open(path, "a"):
    os.utime(path)


def end(path):
  """Marks the task's training as ended: its heartbeat stops on purpose."""
  with open(path + _ENDED, "w"):
    pass
  try:
    os.remove(path)
  except FileNotFoundError:
    pass


def ended(directory):
  """Names of the tasks whose training ended."""
  return {name[:-len(_ENDED)] for name in os.listdir(directory) if name.endswith(_ENDED)}


def stalled(directory, timeout_secs, expected=(), started=None):
  """Names of the tasks whose heartbeat is older than `timeout_secs`.

  A task of `expected` that has not beaten at all, `timeout_secs` after `started` (a
  time.time()), is stalled too: it may have stopped before its first beat. A task whose
  training ended is not.
  """
  now, names = time.time(), set()
  present = set(os.listdir(directory))
  for name in present | set(expected):
    if name.endswith(_ENDED) or name + _ENDED in present:
      continue
    try:
      last = os.path.getmtime(os.path.join(directory, name))
    except FileNotFoundError:
      if started is None or name not in expected:
        continue
      last = started
    if now - last > timeout_secs:
      names.add(name)
  return sorted(names)
