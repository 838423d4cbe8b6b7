"""How a job preempted at one agreed step ends: the chief's save known to every task, and
the chief the last to exit.

srun --kill-on-bad-exit ends a step's other tasks as soon as one exits with a code other
than 0, and a task ended that way makes the step's code 143, not the 200 the sbatch
script requeues on; a multi_worker task also waits, as it exits, for its chief
(TensorFlow's coordination service). So the chief leaves SAVED (the step) once its saver
wrote the checkpoint; every other task (workers, evaluator) waits for it, leaves its own
acknowledgement, and exits; the chief exits once each has, a moment later. Files in the
model_dir, which every task reaches: one written before `since` is an earlier run's.
"""

import os
import time

import tensorflow as tf
from absl import logging

from estimator_dist import command_line
from estimator_dist.contract import stop_files
from estimator_dist.task import early_stopping
from estimator_dist.task import preemption

SAVED = stop_files.SAVED_ON_PREEMPTION
_EXIT_MOMENT_SECS = 1.0  # Between a task's acknowledgement and its exit.


def clear(model_dir):
  """Removes an earlier run's files (the chief, before it trains)."""
  for path in tf.io.gfile.glob(os.path.join(model_dir, SAVED + "*")):
    tf.io.gfile.remove(path)


class SaidWhenWritten(tf.estimator.CheckpointSaverListener):
  """On the chief: says the save is done as soon as its saver wrote the last checkpoint of
  training stopped on a preemption, before its session closes (which can take seconds
  more): the launcher then knows the work is saved, whatever happens next."""

  def __init__(self, model_dir):
    self._model_dir = model_dir

  def end(self, session, global_step_value):
    if preemption.requested():
      _say_saved(self._model_dir, global_step_value)


def _say_saved(model_dir, step):
  with tf.io.gfile.GFile(os.path.join(model_dir, SAVED), "w") as f:
    f.write(str(step))
  preemption.work_saved()


def end_on_chief(model_dir, task, *, step, since, timeout_secs):
  """Says the save of `step` is done (unless said already), then waits for every other
  task's acknowledgement."""
  if not saved(model_dir, since):
    _say_saved(model_dir, step)
  others = [f".rank-{rank}" for rank in range(1, task.size)] + (
      [".evaluator"] if task.num_tasks("evaluator") else [])
  missing = _wait(lambda: [n for n in others if not early_stopping.written_since(os.path.join(model_dir, SAVED + n), since)],
                  timeout_secs)
  if missing:
    logging.warning(command_line.line("%s did not end within %gs of the save"),
                    ", ".join(n.lstrip(".") for n in missing), timeout_secs)
  time.sleep(_EXIT_MOMENT_SECS)


def saved(model_dir, since):
  """Whether the chief said it saved on preemption (an evaluator that got no signal ends
  then too)."""
  return early_stopping.written_since(os.path.join(model_dir, SAVED), since)


def end_elsewhere(model_dir, task, *, since, timeout_secs):
  """Waits until the chief says it saved, then acknowledges."""
  if _wait(lambda: not saved(model_dir, since), timeout_secs):
    logging.warning(command_line.line("the chief did not say it saved within %gs"),
                    timeout_secs)
  name = ".evaluator" if task.role == "evaluator" else f".rank-{task.rank}"
  with tf.io.gfile.GFile(os.path.join(model_dir, SAVED + name), "w") as f:
    f.write("")
  if saved(model_dir, since):
    preemption.work_saved()


def _wait(pending, timeout_secs):
  """Polls `pending()` until it is falsy or the timeout passed; its last value."""
  deadline = time.monotonic() + timeout_secs
  while (left := pending()) and time.monotonic() < deadline:
    time.sleep(0.2)
  return left
