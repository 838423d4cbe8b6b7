"""How a job preempted at one agreed step ends: the chief's save known to every task, and
the chief the last to exit.

srun --kill-on-bad-exit ends a step's other tasks as soon as one exits with a code other
than 0, and a task ended that way makes the step's code 143, not the 200 the sbatch
script requeues on; a multi_worker task also waits, as it exits, for its chief
(TensorFlow's coordination service). So the chief posts that it saved (the step) in the
job's mailbox once its saver wrote the checkpoint; every other task (workers, evaluator)
waits for it, posts its own acknowledgement, and exits; the chief exits once each has, a
moment later. The mailbox is new for each attempt: an earlier run's save never counts.
A task without a mailbox (a Kubernetes pod, whose engine runs no step that ends the others
early) ends after its own part without waiting.
"""

import time

import tensorflow as tf
from absl import logging

from estimator_dist import command_line
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.task import preemption

_EXIT_MOMENT_SECS = 1.0  # Between a task's acknowledgement and its exit.


class SaidWhenWritten(tf.estimator.CheckpointSaverListener):
  """On the chief: says the save is done as soon as its saver wrote the last checkpoint of
  training stopped on a preemption, before its session closes (which can take seconds
  more): the launcher then knows the work is saved, whatever happens next."""

  def end(self, session, global_step_value):
    if preemption.requested():
      _say_saved(global_step_value)


def _say_saved(step):
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox:
    mailbox.post(mailbox_lib.PREEMPTION, mailbox_lib.CHIEF, {"step": int(step)})
  preemption.work_saved()


def _name(task):
  return "evaluator" if task.role == "evaluator" else f"rank-{task.rank}"


def end_on_chief(task, *, step, timeout_secs):
  """Says the save of `step` is done (unless said already), then waits for every other
  task's acknowledgement."""
  if not saved():
    _say_saved(step)
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox is None:
    return
  others = [f"rank-{rank}" for rank in range(1, task.size)] + (
      ["evaluator"] if task.num_tasks("evaluator") else [])
  deadline = time.monotonic() + timeout_secs
  while (missing := [n for n in others if mailbox.read(mailbox_lib.PREEMPTION, n) is None]
         ) and time.monotonic() < deadline:
    time.sleep(0.2)
  if missing:
    logging.warning(command_line.line("%s did not end within %gs of the save"),
                    ", ".join(missing), timeout_secs)
  time.sleep(_EXIT_MOMENT_SECS)


def saved():
  """Whether the chief said it saved on preemption (an evaluator that got no signal ends
  then too)."""
  mailbox = mailbox_lib.Mailbox.of_environment()
  return bool(mailbox) and mailbox_lib.saved_on_preemption(mailbox) is not None


def end_elsewhere(task, *, timeout_secs):
  """Waits until the chief says it saved, then acknowledges."""
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox is None:
    return
  if mailbox.wait(mailbox_lib.PREEMPTION, mailbox_lib.CHIEF,
                  timeout_secs=timeout_secs) is None:
    logging.warning(command_line.line("the chief did not say it saved within %gs"),
                    timeout_secs)
  mailbox.post(mailbox_lib.PREEMPTION, _name(task), {})
  if saved():
    preemption.work_saved()
