"""The evaluator task: evaluates new checkpoints while training runs, and ends with it.

TensorFlow's evaluator sleeps out its throttle interval after every evaluation, also
after the final one, and may sleep through the final checkpoint's arrival: a job whose
training ended could wait a minute for it. This one evaluates a new checkpoint at most
every `throttle_secs`, but the final checkpoint (step >= max_steps) at once, and returns.
"""

import time

from absl import logging


def _step(path):
  return int(path.rsplit("-", 1)[1]) if path else -1


def evaluate_until(estimator, eval_spec, *, max_steps, poll_secs=0.5):
  """Evaluates checkpoints until it has evaluated one of step >= max_steps; its metrics."""
  last, next_time = None, 0.0
  while True:
    path = estimator.latest_checkpoint()
    final = _step(path) >= max_steps
    if path and path != last and (final or time.monotonic() >= next_time):
      metrics = estimator.evaluate(eval_spec.input_fn, steps=eval_spec.steps,
                                   name=eval_spec.name, hooks=eval_spec.hooks,
                                   checkpoint_path=path)
      last, next_time = path, time.monotonic() + eval_spec.throttle_secs
      if final:
        logging.info("estimator_dist: evaluated the final checkpoint %s; the evaluator ends",
                     path)
        return metrics
    time.sleep(poll_secs)
