"""Evaluation of checkpoints while training runs, and the serving exports after each.

One process evaluates: the evaluator task when the job has one, else the chief, in a
thread beside its training (Horovod's rank 0 must not stop in the middle of its
all-reduces to evaluate, nor may any other training task). It evaluates each new
checkpoint, at most once every `throttle_secs`, into `model_dir/eval`, and after each
evaluation runs the exporters as `tf.estimator.train_and_evaluate` does, into
`model_dir/export/<exporter name>`; the final checkpoint is evaluated and exported
once training has ended (`is_the_final_export`, which `FinalExporter` waits for).
"""

import contextlib
import os
import threading
import time

import tensorflow as tf
from absl import logging

from estimator_dist import errors

EXPORTER_KINDS = ("latest", "best", "final")


def exporters(kinds_or_exporters, serving_input_receiver_fn, *, exports_to_keep):
  """Exporters from `tf.estimator.Exporter`s and kind names ("latest", "best", "final")."""
  made = []
  for item in kinds_or_exporters:
    if isinstance(item, tf.estimator.Exporter):
      made.append(item)
      continue
    if item not in EXPORTER_KINDS:
      raise errors.ConfigError(f"exporter {item!r} is neither a tf.estimator.Exporter nor "
                               f"one of {EXPORTER_KINDS}.")
    if serving_input_receiver_fn is None:
      raise errors.ConfigError(
          f"the {item} exporter needs a serving_input_receiver_fn (what the exported model "
          f"takes as input): pass serving_input_receiver_fn= to train_and_evaluate, e.g. "
          f"tf.estimator.export.build_parsing_serving_input_receiver_fn(feature_spec).")
    if item == "latest":
      made.append(tf.estimator.LatestExporter("latest", serving_input_receiver_fn,
                                              exports_to_keep=exports_to_keep))
    elif item == "best":
      made.append(tf.estimator.BestExporter("best", serving_input_receiver_fn,
                                            exports_to_keep=exports_to_keep))
    else:
      made.append(tf.estimator.FinalExporter("final", serving_input_receiver_fn))
  names = [e.name for e in made]
  if len(set(names)) != len(names):
    raise errors.ConfigError(f"exporters need different names, got {names}.")
  return tuple(made)


class Evaluations:
  """Evaluates checkpoints with `estimator` (one process's own) and exports after each."""

  def __init__(self, estimator, eval_spec):
    self._estimator, self._spec = estimator, eval_spec
    self.last_path, self.last_metrics = None, None
    self._exported = set()

  def run(self, path, *, final=False):
    """Evaluates `path` (unless it was the last one evaluated) and exports; its metrics."""
    if path != self.last_path:
      try:
        metrics = self._estimator.evaluate(
            self._spec.input_fn, steps=self._spec.steps, name=self._spec.name,
            hooks=self._spec.hooks, checkpoint_path=path)
      except (tf.errors.NotFoundError, ValueError):
        if final or tf.io.gfile.exists(path + ".index"):
          raise
        # Training saved newer ones and deleted it (keep_checkpoint_max) meanwhile.
        logging.info("estimator_dist: %s was deleted before its evaluation ended; skipped",
                     path)
        return None
      self.last_path, self.last_metrics = path, metrics
    base = os.path.join(self._estimator.model_dir, "export")
    for exporter in self._spec.exporters or ():
      if (exporter.name, path) in self._exported:  # Latest or best, at the final step.
        continue
      exported = exporter.export(self._estimator, os.path.join(base, exporter.name), path,
                                 self.last_metrics, final)
      if exported:
        self._exported.add((exporter.name, path))
        logging.info("estimator_dist: exported %s (%s exporter)",
                     exported.decode() if isinstance(exported, bytes) else exported,
                     exporter.name)
    return self.last_metrics


@contextlib.contextmanager
def beside_training(evaluations, model_dir, *, throttle_secs, poll_secs=0.5):
  """Evaluates new checkpoints of `model_dir` in a thread while the body trains."""
  done, failure = threading.Event(), []
  # The checkpoint training resumes from was evaluated by the run that wrote it.
  resumed_from = tf.train.latest_checkpoint(model_dir)

  def loop():
    next_time = 0.0
    while not done.wait(poll_secs):
      path = tf.train.latest_checkpoint(model_dir)
      if (path and path not in (evaluations.last_path, resumed_from) and
          time.monotonic() >= next_time):
        try:
          evaluations.run(path)
        except Exception as e:  # pylint: disable=broad-except
          if not tf.io.gfile.exists(path + ".index"):
            continue  # Deleted (keep_checkpoint_max) while it was exported.
          logging.error("estimator_dist: evaluation during training failed, training goes "
                        "on and then fails: %s", e)
          failure.append(e)
          return
        next_time = time.monotonic() + throttle_secs

  thread = threading.Thread(target=loop, name="estimator_dist_evaluation", daemon=True)
  thread.start()
  try:
    yield
  finally:
    done.set()
    thread.join()
  if failure:
    raise failure[0]
