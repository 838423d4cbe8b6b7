"""Heartbeats: a training task that stops making progress is noticed, not waited for.

When the launcher sets ESTIMATOR_DIST_HEARTBEAT_DIR, every training task touches a file
named after itself there about once a second from the moment it starts (the watchdog
thread until the first step, then `guards.HeartbeatHook` once per step), and removes it
when its training ends. A file that has not been touched for --hang_timeout_secs means the task
is stuck (stopped, deadlocked, waiting on a peer that is), and the launcher stops the job.
The training side is `watchdog` and `guards.HeartbeatHook`.
"""

import os
import time

HEARTBEAT_ENV = "ESTIMATOR_DIST_HEARTBEAT_DIR"


def path_of(task, env):
  """The heartbeat file of a training `task`; None when the launcher asked for none."""
  directory = env.get(HEARTBEAT_ENV)
  if not directory or not task.is_training:
    return None
  return os.path.join(directory, f"{task.role}:{task.index}")


def beat(path):
  with open(path, "a"):
    os.utime(path)


def end(path):
  try:
    os.remove(path)
  except FileNotFoundError:
    pass


def stalled(directory, timeout_secs):
  """Names of the tasks whose heartbeat is older than `timeout_secs`."""
  now, names = time.time(), []
  for name in sorted(os.listdir(directory)):
    try:
      if now - os.path.getmtime(os.path.join(directory, name)) > timeout_secs:
        names.append(name)
    except FileNotFoundError:  # The task ended its training meanwhile.
      pass
  return names
