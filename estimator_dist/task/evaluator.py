"""The evaluator task: evaluates new checkpoints while training runs, and ends with it.

TensorFlow's evaluator sleeps out its throttle interval after every evaluation, also
after the final one, and may sleep through the final checkpoint's arrival: a job whose
training ended could wait a minute for it; after an early stop it waits for ever. This
one evaluates a new checkpoint at most every `throttle_secs`, but the final checkpoint
(step >= max_steps, or the step the chief marked as its early stop) at once, exports
after each evaluation, and returns. Asked to stop by a signal (`preemption`), or once the
chief says it saved on one, it ends: a rerun evaluates that checkpoint.
"""

import time

from absl import logging

from estimator_dist import command_line
from estimator_dist.contract import checkpoint_names
from estimator_dist.task import early_stopping
from estimator_dist.task import evaluation
from estimator_dist.task import preemption
from estimator_dist.task import preemption_save


def evaluate_until(estimator, eval_spec, *, task, max_steps, poll_secs=0.5):
  """Evaluates checkpoints until it has evaluated the final one; its metrics."""
  started, next_time = time.time(), 0.0
  evaluations = evaluation.Evaluations(estimator, eval_spec)
  while True:
    if preemption.requested() or preemption_save.saved():
      preemption_save.end_elsewhere(task, timeout_secs=preemption.remaining_secs())
      raise preemption.Preempted()
    path = estimator.latest_checkpoint()
    stopped = early_stopping.stopped_at(estimator.model_dir, since=started)
    step = checkpoint_names.step_of(path) if path else -1
    final = step >= (max_steps if stopped is None else min(stopped, max_steps))
    try:
      if path and final:
        metrics = evaluations.run(path, final=True)
        logging.info(command_line.line("evaluated the final checkpoint %s; the evaluator ends"),
                     path)
        return metrics
      if path and path != evaluations.last_path and time.monotonic() >= next_time:
        evaluations.run(path)
        next_time = time.monotonic() + eval_spec.throttle_secs
    except evaluation.Abandoned as e:  # Preempted: the next look ends the evaluator.
      logging.warning(command_line.line("%s"), e)
      continue
    time.sleep(poll_secs)
