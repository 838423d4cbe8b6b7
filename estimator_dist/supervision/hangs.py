"""A job's hang checks: heartbeats (during training, and after it: a task idle for ever
once its training ended, contract/heartbeat.py), and what they cannot tell: stopped
processes.

Every process of a task is watched, not only the one the launcher started: a stopped
wrapper (the nsenter that starts a task in the job's namespaces) never exits, even after
its task ended, and a stopped ps or evaluator has no heartbeat.
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
# A Horovod rank that ended before its training did stops the job after this long, where
# horovodrun did not exit first (its exit code then stands): under Gloo it never does.
_GONE_SECS = 2.0


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


class Hangs:
  """The hang checks of a job's tasks, looked at every _LOOK_SECS: a heartbeat (in
  `mailbox`, of the tasks `expected`; None: none) `timeout_secs` old, during training or
  after it, a process stopped that long. `log(message)` says which."""

  def __init__(self, *, mailbox, timeout_secs, first_beat_secs, expected, log):
    """first_beat_secs: how long a task may take to its first beat (its start-up: TensorFlow's
    import, the program's own start, which the heartbeat's timeout does not bound)."""
    self._mailbox, self._timeout_secs, self._expected = mailbox, timeout_secs, expected
    self._log, self._started, self._next_look = log, time.time(), 0.0
    self._first_beat_by = self._started + max(timeout_secs, first_beat_secs)
    self._stopped_since, self._gone_since = {}, None

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
    idle = self._mailbox and heartbeat.idle_after_training(self._mailbox, timeout)
    if idle and not (stuck or too_long):
      self._log(f"{heartbeat.idle_line(idle, timeout)}; stopping the job")
    return errors.STALLED_EXIT_CODE if stuck or too_long or idle else 0

  def _gone(self, tasks):
    """The expected tasks that ended before their training did, and that no task of
    `tasks` is (the launcher sees those exit), for _GONE_SECS."""
    gone = self._mailbox and sorted(
        heartbeat.exited_early(self._mailbox) & set(self._expected) - {t.name for t in tasks})
    self._gone_since = (self._gone_since or time.monotonic()) if gone else None
    return gone if gone and time.monotonic() - self._gone_since >= _GONE_SECS else []
