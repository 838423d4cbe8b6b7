"""Progress the heartbeats cannot tell: stopped processes, and tasks idle after training.

Every process of a task is watched, not only the one the launcher started: a stopped
wrapper (the nsenter that starts a task in the job's namespaces) never exits, even after
its task ended, and a stopped ps or evaluator has no heartbeat.

Once a task's training has ended (its heartbeat marked so), it does what its program does
next: the final evaluation, exports, predictions. Its heartbeat no longer beats, and the
launcher waits for it to exit. A task that waits there for ever (a session that waits for
a ps task that has exited, a stopped process) uses no CPU at all: measured here, a
session waiting for a gone ps and a server that joins both used 0.00 s of CPU in 10 s,
while any work uses about a second per second.
"""

import os
import time

# The states in /proc/<pid>/stat of a stopped process: by a signal, or by a debugger.
_STOPPED = ("T", "t")
_TICK_SECS = 1.0 / os.sysconf("SC_CLK_TCK")
# Progress: at least this share of one CPU since the last progress (and at least the
# least CPU time counted), so the slow polling of a waiting process never counts.
_PROGRESS_SHARE = 0.01
_PROGRESS_LEAST_SECS = 0.05


def stopped(tasks, since, table):
  """[(what, seconds)]: each stopped process of the running `tasks`, and for how long
  (`since`: pid -> when first seen stopped; `table`: {pid: (parent, state, name)})."""
  now, found = time.monotonic(), []
  for task in tasks:
    if task.process.poll() is not None:
      continue  # Ended: its pid may be another process's by now.
    for pid in sorted(task.family(table)):
      _, state, name = table.get(pid, (None, None, None))
      if state in _STOPPED:
        found.append((pid, f"{task.name} is stopped: its process {pid} ({name}) has "
                           f"not run", now - since.setdefault(pid, now)))
  for pid in set(since) - {pid for pid, _, _ in found}:
    del since[pid]  # Running again: a later stop counts from then.
  return [(what, secs) for _, what, secs in found]


def cpu_secs(pids):
  """User and system CPU seconds used by the processes `pids` (those alive) and by their
  children that ended (counted in their parent once reaped), so that a child's end does
  not lower the sum."""
  total = 0
  for pid in pids:
    try:
      with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
      total += sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
    except (OSError, IndexError, ValueError):
      pass
  return total * _TICK_SECS


class Idleness:
  """How long each task whose training ended has made no progress, from repeated looks."""

  def __init__(self):
    self._marks = {}  # name: (CPU seconds, time.monotonic()) at its last progress

  def stalled(self, tasks, ended, timeout_secs, table):
    """[(name, idle seconds)] of the running `tasks` whose training ended (`ended`: their
    names) and that have made no progress for `timeout_secs` (`table`: as `stopped`)."""
    found = []
    for task in tasks:
      if task.name in ended and task.process.poll() is None:
        idle = self._idle_secs(task.name, task.family(table))
        if idle >= timeout_secs:
          found.append((task.name, idle))
    return found

  def _idle_secs(self, name, pids):
    used, now = cpu_secs(pids), time.monotonic()
    mark = self._marks.get(name)
    if mark is None or used - mark[0] >= max(_PROGRESS_LEAST_SECS,
                                             _PROGRESS_SHARE * (now - mark[1])):
      self._marks[name] = mark = (used, now)
    return now - mark[1]
