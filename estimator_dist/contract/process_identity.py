"""A launcher's identity, "pid:start time", by which its tasks and later launchers know it.

The launcher gives it to every task (`env_vars.LAUNCHER`): a task's watchdog companion ends
the task once that process is gone. It also names who holds a model_dir's lock
(`outputs.model_dir_lock`) and which launcher made a temporary directory
(`supervision.job_dirs`), so a later launcher can tell a running holder from a dead one. The start
time tells a process from a later one that got its pid.

The companion (`task/watchdog_companion.py`), which may import nothing of estimator_dist,
reads the same field of /proc/PID/stat; tests/watchdog_test.py holds the two together.
That is why this reads it by hand, not through psutil (whose start time is a float of
seconds, derived from it): both sides compare the same clock ticks.
"""

import os
import signal

# Field 22 of /proc/PID/stat (proc(5)), counted after the command name: the start time.
START_TIME_FIELD = 19


def launcher_identity(pid=None):
  """"pid:start time" of a process (this one by default); "pid:None" when there is none."""
  pid = os.getpid() if pid is None else pid
  try:
    with open(f"/proc/{pid}/stat") as f:
      # After the command name, which may hold spaces and parentheses.
      fields = f.read().rsplit(")", 1)[1].split()
  except OSError:
    fields = []
  start = fields[START_TIME_FIELD] if len(fields) > START_TIME_FIELD else None
  return f"{pid}:{start}"


def die_with_parent():
  """Linux, in a child before its exec: it gets SIGKILL when the process that started it
  dies without cleaning up (PR_SET_PDEATHSIG)."""
  try:
    import ctypes  # pylint: disable=g-import-not-at-top
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
  except OSError:
    pass
