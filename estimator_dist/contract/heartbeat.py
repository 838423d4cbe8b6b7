"""Heartbeats: a training task that stops making progress is noticed, not waited for.

When the launcher sets `env_vars.HEARTBEAT_DIR`, every training task touches a file
named after itself there about once a second from the moment it starts (the watchdog
thread until the first step, then `training.hooks.HeartbeatHook` once per step), and marks it
ended when its training ends. A file that has not been touched for --hang_timeout_secs means the task
is stuck (stopped, deadlocked, waiting on a peer that is), and the launcher stops the job.
The training side is `task.watchdog` and `training.hooks.HeartbeatHook`.

Once training runs, a beat also says how far it is (`Progress`): the task's global step,
the last step and the examples per step, which the launcher's progress lines read.
"""

import dataclasses
import json
import os
import time
from typing import Optional

from estimator_dist.contract import env_vars
from estimator_dist.contract import whole_file

_ENDED = ".ended"


def path_of(task, env):
  """The heartbeat file of a training `task`; None when the launcher asked for none, or
  when its directory is not there (a Spark executor that does not share the driver's
  file system: nobody could read the beats)."""
  directory = env.get(env_vars.HEARTBEAT_DIR)
  if not directory or not task.is_training or not os.path.isdir(directory):
    return None
  return os.path.join(directory, f"{task.role}:{task.index}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Progress:
  """How far a task's training is: its global step of `last_step`, at `time` (time.time())."""
  step: int
  last_step: int
  examples_per_step: Optional[int] = None
  time: float = 0.0
  ended: bool = False  # The task's training ended at `step`.


def beat(path, progress=None):
  """Touches `path`; with a `progress`, writes it there."""
  if progress is None:
    with open(path, "a"):
      os.utime(path)
    return
  whole_file.write_json(path, dataclasses.asdict(progress))


def progress_of(directory):
  """{task name: Progress} of the tasks whose beats, or whose end, say how far they are."""
  found = {}
  for name in os.listdir(directory):
    if name.endswith(whole_file.SUFFIX):
      continue
    try:
      with open(os.path.join(directory, name)) as f:
        progress = Progress(**json.load(f))
    except (OSError, ValueError, TypeError):
      continue  # Gone, or a beat without progress.
    task = name[:-len(_ENDED)] if name.endswith(_ENDED) else name
    if task not in found or progress.ended:
      found[task] = progress
  return found


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
    if name.endswith((_ENDED, whole_file.SUFFIX)) or name + _ENDED in present:
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
