"""Heartbeats: a training task that stops making progress is noticed, not waited for.

When the launcher sets ESTIMATOR_DIST_HEARTBEAT_DIR, every training task touches a file
named after itself there at most once a second while it trains, and removes it when its
training ends. A file that has not been touched for --hang_timeout_secs means the task
is stuck (stopped, deadlocked, waiting on a peer that is), and the launcher stops the job.
The training side is `guards.HeartbeatHook`.
"""

import os
import time

HEARTBEAT_ENV = "ESTIMATOR_DIST_HEARTBEAT_DIR"


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
