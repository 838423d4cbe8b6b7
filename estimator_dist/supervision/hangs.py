"""A job's hang checks: heartbeats, and the progress they cannot tell: stopped processes,
and tasks idle after training.

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

import time

from estimator_dist import errors
from estimator_dist.contract import heartbeat
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.supervision import process_tree

# How often the processes are looked at: the table of every process costs milliseconds of
# CPU (psutil), on the CPUs a sweep's trial shares with its tasks, and the hang checks
# count in seconds.
_LOOK_SECS = 1.0
# A task that said it waits for the chief this recently is not idle (contract/rounds.py
# says so about every second while it waits).
_WAITING_SECS = 5.0
# A Horovod rank that ended before its training did stops the job after this long, where
# horovodrun did not exit first (its exit code then stands): under Gloo it never does.
_GONE_SECS = 2.0

# Progress: at least this share of one CPU since the last progress (and at least the
# least CPU time counted), so the slow polling of a waiting process never counts.
_PROGRESS_SHARE = 0.01
_PROGRESS_LEAST_SECS = 0.05


def stopped(tasks, since, table):
  """[(what, seconds)]: each stopped process of the running `tasks`, and for how long
  (`since`: pid -> when first seen stopped; `table`: process_tree.process_table())."""
  now, found = time.monotonic(), []
  for task in tasks:
    if task.process.poll() is not None:
      continue  # Ended: its pid may be another process's by now.
    for pid in sorted(task.family(table)):
      _, state, name = table.get(pid, (None, None, None))
      if process_tree.stopped(state):
        found.append((pid, f"{task.name} is stopped: its process {pid} ({name}) has "
                           f"not run", now - since.setdefault(pid, now)))
  for pid in set(since) - {pid for pid, _, _ in found}:
    del since[pid]  # Running again: a later stop counts from then.
  return [(what, secs) for _, what, secs in found]


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
    used, now = process_tree.cpu_secs(pids), time.monotonic()
    mark = self._marks.get(name)
    if mark is None or used - mark[0] >= max(_PROGRESS_LEAST_SECS,
                                             _PROGRESS_SHARE * (now - mark[1])):
      self._marks[name] = mark = (used, now)
    return now - mark[1]


class Hangs:
  """The hang checks of a job's tasks, looked at every _LOOK_SECS: a heartbeat (in
  `mailbox`, of the tasks `expected`; None: none) `timeout_secs` old, a process stopped
  that long, a task idle that long after its training. `log(message)` says which."""

  def __init__(self, *, mailbox, timeout_secs, first_beat_secs, expected, log):
    """first_beat_secs: how long a task may take to its first beat (its start-up: TensorFlow's
    import, the program's own start, which the heartbeat's timeout does not bound)."""
    self._mailbox, self._timeout_secs, self._expected = mailbox, timeout_secs, expected
    self._log, self._started, self._next_look = log, time.time(), 0.0
    self._first_beat_by = self._started + max(timeout_secs, first_beat_secs)
    self._stopped_since, self._idleness, self._gone_since = {}, Idleness(), None

  def found(self, tasks):
    """The exit code of the job when one of the running `tasks` hangs, or a task of theirs
    the launcher does not watch by itself (a Horovod rank) ended before its training did
    (said); 0 otherwise, and until a look is due."""
    if time.monotonic() < self._next_look:
      return 0
    gone = self._gone(tasks)
    if gone:
      self._log(f"{', '.join(gone)} ended before its training did, and the job's other "
                f"tasks would wait for it (horovodrun under Gloo does not end them); "
                f"stopping the job")
      if mailbox_lib.saved_on_preemption(self._mailbox) is not None:
        return errors.PREEMPTED_EXIT_CODE  # The work is saved.
      return max(mailbox_lib.verdict_codes(self._mailbox), default=1)
    self._next_look, timeout = time.monotonic() + _LOOK_SECS, self._timeout_secs
    table = process_tree.process_table()
    stops = stopped(tasks, self._stopped_since, table)
    stuck = self._mailbox and heartbeat.stalled(self._mailbox, timeout,
                                                expected=self._expected,
                                                first_beat_by=self._first_beat_by)
    if stuck:
      if any(self._mailbox.modified(mailbox_lib.BEATS, name) for name in stuck):
        secs, beats = timeout, f"; last beat: {heartbeat.last_steps(self._mailbox, stuck)}"
      else:
        secs = round(time.time() - self._started)
        beats = ": none since the job started, which --startup_timeout_secs bounds"
      self._log(f"no training progress on {', '.join(stuck)} for {secs}s (heartbeat{beats}"
                f"{''.join(f'; {s}' for s, _ in stops)}); stopping the job")
    too_long = [s for s, secs in stops if secs >= timeout]
    if too_long and not stuck:
      self._log(f"{'; '.join(too_long)} for {timeout}s (SIGSTOP, or a debugger); stopping "
                f"the job")
    idle = self._mailbox and self._idleness.stalled(
        tasks, heartbeat.ended(self._mailbox) - heartbeat.waiting(self._mailbox, _WAITING_SECS),
        timeout, table)
    if idle and not (stuck or too_long):
      self._log(f"{', '.join(name for name, _ in idle)} ended its training and has made no "
                f"progress since, for {idle[0][1]:.0f}s (it used no CPU: it waits for "
                f"something, such as a session that waits for a task that has exited); "
                f"stopping the job")
    return errors.STALLED_EXIT_CODE if stuck or too_long or idle else 0

  def _gone(self, tasks):
    """The expected tasks that ended before their training did, and that no task of
    `tasks` is (the launcher sees those exit), for _GONE_SECS."""
    gone = self._mailbox and sorted(
        heartbeat.exited_early(self._mailbox) & set(self._expected) - {t.name for t in tasks})
    self._gone_since = (self._gone_since or time.monotonic()) if gone else None
    return gone if gone and time.monotonic() - self._gone_since >= _GONE_SECS else []
