"""Heartbeats: a training task that stops making progress is noticed, not waited for.

In a job with a mailbox (contract/mailbox.py), every training task touches its message
of the mailbox's BEATS (named after itself) about once a second from the moment it starts (the watchdog
thread until the first step, then `training.hooks.HeartbeatHook` once per step), and marks it
ended when its training ends. A file that has not been touched for --hang_timeout_secs means the task
is stuck (stopped, deadlocked, waiting on a peer that is), and the launcher stops the job.
The training side is `task.watchdog` and `training.hooks.HeartbeatHook`.

After its training ended, a task's beat is its `.busy` message, touched while it works
(its watchdog companion, from its CPU time) or waits for the chief's round on purpose
(`say_waiting`): one not touched for --hang_timeout_secs is a task idle for ever after its
training (`idle_after_training`), which the local launcher's, SLURM's and Spark's
watchers read as they read beats.

Once training runs, a beat also says how far it is (`Progress`): the task's global step,
the last step and the examples per step, which the launcher's progress lines read, and
the bytes of the model's trainable variables, which `estimator-dist bench` projects from.
"""

import dataclasses
import os
import time
from typing import Optional

from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import whole_file

_ENDED = ".ended"
# Touched by the task's watchdog companion (task/watchdog_companion.py, which imports
# nothing of ours): when the task ended before its training did; while it works after its
# training ended (removed when it ends).
_EXITED, _BUSY = ".exited", ".busy"


def path_of(task, env):
  """The heartbeat file of a training `task`; None without a mailbox (nobody could read
  the beats)."""
  mailbox = mailbox_lib.Mailbox.of_environment(env)
  if mailbox is None or not task.is_training:
    return None
  return mailbox.path(mailbox_lib.BEATS, task.name)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Progress:
  """How far a task's training is: its global step of `last_step`, at `time` (time.time())."""
  step: int
  last_step: int
  examples_per_step: Optional[int] = None
  trainable_bytes: Optional[int] = None  # What one step's gradients hold.
  time: float = 0.0
  ended: bool = False  # The task's training ended at `step`.


_FIELDS = {f.name for f in dataclasses.fields(Progress)}


def beat(path, progress=None):
  """Touches `path`; with a `progress`, writes it there."""
  if progress is None:
    with open(path, "a"):
      os.utime(path)
    return
  whole_file.write_json(path, dataclasses.asdict(progress))


def progress_of(mailbox):
  """{task name: Progress} of the tasks whose beats, or whose end, say how far they are."""
  found = {}
  for name in mailbox.names(mailbox_lib.BEATS):
    record = mailbox.value(mailbox_lib.BEATS, name, dict) or {}
    try:  # The fields this version knows: a newer task's beat may have more.
      progress = Progress(**{k: v for k, v in record.items() if k in _FIELDS})
    except TypeError:
      continue  # Gone, or a beat without progress.
    task = name[:-len(_ENDED)] if name.endswith(_ENDED) else name
    if task not in found or progress.ended:
      found[task] = progress
  return found


def last_steps(mailbox, names):
  """Where the tasks `names` got to, as their beats say: "chief:0 at step 120 of 5000,
  worker:0 before its first step"."""
  found = progress_of(mailbox)
  return ", ".join(f"{name} at step {found[name].step} of {found[name].last_step}"
                   if name in found else f"{name} before its first step" for name in names)


def begin(path):
  """A new round of training of the task (its program's next train()): the end of the
  last one no longer holds, and its beats count from now (its watchdog beats only until
  the first round's first step)."""
  try:
    os.remove(path + _ENDED)
  except FileNotFoundError:
    pass
  beat(path)


def end(path, progress=None):
  """Marks the task's training as ended (at `progress`): its heartbeat stops on purpose."""
  if progress is None:
    with open(path + _ENDED, "w"):
      pass
  else:
    whole_file.write_json(path + _ENDED, dataclasses.asdict(
        dataclasses.replace(progress, ended=True)))
  try:
    os.remove(path)
  except FileNotFoundError:
    pass


def say_waiting(mailbox, task_name):
  """Says that `task_name`, its training ended, waits for the chief (a round of its
  calls): not idle, while the chief works on it (the chief's own checks watch the chief)."""
  beat(mailbox.path(mailbox_lib.BEATS, task_name + _BUSY))


def idle_after_training(mailbox, timeout_secs):
  """Names of the tasks whose training ended and that have neither worked nor said they
  wait for the chief for `timeout_secs` since (their `.busy` and `.ended` that old: a
  `.busy` of a wait before the training, or of an earlier round, counts from its end)."""
  now, present, found = time.time(), set(mailbox.names(mailbox_lib.BEATS)), []
  for task in (name[:-len(_BUSY)] for name in present if name.endswith(_BUSY)):
    last = [mailbox.modified(mailbox_lib.BEATS, task + end) for end in (_BUSY, _ENDED)]
    if None not in last and now - max(last) > timeout_secs:
      found.append(task)
  return sorted(found)


def idle_line(names, timeout_secs):
  """The hang checks' line of tasks idle after their training."""
  return (f"{', '.join(names)} ended its training and has made no progress since, for "
          f"{timeout_secs:g}s (it used no CPU: it waits for something, such as a session "
          f"that waits for a task that has exited)")


def ended(mailbox):
  """Names of the tasks whose training ended."""
  return {name[:-len(_ENDED)] for name in mailbox.names(mailbox_lib.BEATS)
          if name.endswith(_ENDED)}


def exited_early(mailbox):
  """Names of the tasks that ended before their training did."""
  names = set(mailbox.names(mailbox_lib.BEATS))
  return {name[:-len(_EXITED)] for name in names
          if name.endswith(_EXITED) and name[:-len(_EXITED)] + _ENDED not in names}


def stalled(mailbox, timeout_secs, expected=(), first_beat_by=None):
  """Names of the tasks whose heartbeat is older than `timeout_secs`.

  A task of `expected` that has not beaten at all by `first_beat_by` (a time.time()) is
  stalled too: it may have stopped before its first beat. A task whose training ended is
  not.
  """
  now, names = time.time(), set()
  present = set(mailbox.names(mailbox_lib.BEATS))
  for name in present | set(expected):
    if name.endswith((_ENDED, _BUSY, _EXITED)) or name + _ENDED in present:
      continue
    last = mailbox.modified(mailbox_lib.BEATS, name)
    if last is None:
      if first_beat_by is not None and name in expected and now > first_beat_by:
        names.add(name)
    elif now - last > timeout_secs:
      names.add(name)
  return sorted(names)
