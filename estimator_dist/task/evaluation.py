"""Evaluation of checkpoints while training runs, and the serving exports after each.

One process evaluates: the evaluator task when the job has one, else the chief, in a
thread beside its training (Horovod's rank 0 must not stop in the middle of its
all-reduces to evaluate, nor may any other training task). It evaluates each new
checkpoint, at most once every `throttle_secs`, into `model_dir/eval`, and after each
evaluation runs the exporters as `tf.estimator.train_and_evaluate` does, into
`model_dir/export/<exporter name>`; the final checkpoint is evaluated and exported
once training has ended (`is_the_final_export`, which `FinalExporter` waits for).

An evaluation cannot lie or hang: one over no example fails (its metrics would be zeros)
before its summary is written or anything reads its metrics, and one that has not ended
within its timeout is stopped, naming the probable cause. An eval input that repeats for
ever with no `eval_steps` is refused before training starts.
"""

import contextlib
import os
import threading
import time

import tensorflow as tf
from absl import logging
from tensorflow.python.eager import context as eager_context  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.task import best_checkpoint_keeper
from estimator_dist.task import evaluation_settings
from estimator_dist.task import inputs
from estimator_dist.task import preemption



def _name(input_fn):
  return getattr(getattr(input_fn, "func", input_fn), "__name__", None) or repr(input_fn)


def check_eval_input(input_fn, *, steps, params):
  """ConfigError for an eval input that TensorFlow can tell is empty, or repeats for ever
  while no `steps` bound the evaluation. A pipeline that builds only in a graph, or with a
  RunConfig, is not checked here (its evaluation is: `Evaluations`)."""
  args = inputs.check_input_fn(input_fn, "eval_input_fn")
  try:
    with eager_context.eager_mode():  # Estimator calls input_fn in a graph.
      dataset = input_fn(**inputs.estimator_kwargs(args, mode=tf.estimator.ModeKeys.EVAL,
                                                   params=params, config=None))
      if not isinstance(dataset, tf.data.Dataset):
        return
      cardinality = int(dataset.cardinality())
  except Exception:  # pylint: disable=broad-except
    return
  if cardinality == 0:
    raise errors.ConfigError(_empty(input_fn))
  if cardinality == tf.data.INFINITE_CARDINALITY and steps is None:
    raise errors.ConfigError(
        f"the eval_input_fn {_name(input_fn)} repeats for ever and no eval_steps is set, so "
        f"its evaluation would never end: set eval_steps (--eval_steps) or remove repeat() "
        f"from the eval input.")


def _empty(input_fn):
  return (f"the eval_input_fn {_name(input_fn)} gives no example, so its evaluation would "
          f"report zeros as metrics: check what it reads (files, arrays, filters), and that a "
          f"batch with drop_remainder=True is not larger than the eval data.")


class Abandoned(Exception):
  """An evaluation left between two batches because the job is preempted: the save must
  not wait for it, and its metrics would be partial (none are written)."""


class EvaluationWatch(tf.estimator.SessionRunHook):
  """An eval hook that counts each evaluation's batches, fails one that had none (before
  Estimator writes its summary, so nothing reads its metrics), and stops one that runs
  past its timeout, between two batches: `timeout_secs` (0: never), or by default
  TIMEOUT_MULTIPLE times the longest evaluation so far, at least TIMEOUT_FLOOR_SECS. (A
  batch that never returns is the launcher's to notice: the task then uses no CPU.) Once
  the task is preempted, the evaluation is abandoned (`Abandoned`)."""

  def __init__(self, *, input_fn, steps, timeout_secs=None):
    self._input_fn, self._steps, self._timeout_secs = input_fn, steps, timeout_secs
    self._longest_secs = 0.0

  def after_create_session(self, session, coord):
    self._started, self._batches = time.monotonic(), 0

  def before_run(self, run_context):
    if preemption.requested():
      raise Abandoned(f"an evaluation was abandoned after {self._batches} batches: "
                      f"preemption ({preemption.requested()})")
    waited = time.monotonic() - self._started
    timeout = self._timeout_secs
    if timeout is None:
      timeout = max(evaluation_settings.TIMEOUT_FLOOR_SECS,
                    evaluation_settings.TIMEOUT_MULTIPLE * self._longest_secs)
    if not timeout or waited <= timeout:
      return
    cause = (f"an eval input that repeats for ever: set eval_steps or remove repeat() from "
             f"{_name(self._input_fn)}" if self._steps is None else
             f"{self._steps} eval steps take longer than that")
    setting = ("--eval_timeout_secs" if self._timeout_secs else
               f"{evaluation_settings.TIMEOUT_MULTIPLE}x the longest evaluation so far, "
               f"at least {evaluation_settings.TIMEOUT_FLOOR_SECS} s; set --eval_timeout_secs "
               f"to change it")
    raise errors.EvaluationStalled(
        f"an evaluation ran {waited:.0f} s over {self._batches} batches, past its timeout of "
        f"{timeout:.0f} s ({setting}); probable cause: {cause}.")

  def after_run(self, run_context, run_values):
    self._batches += 1

  def end(self, session):
    if not self._batches:
      raise errors.ConfigError(_empty(self._input_fn))
    self._longest_secs = max(self._longest_secs, time.monotonic() - self._started)


def exporters(kinds_or_exporters, serving_input_receiver_fn, *, exports_to_keep):
  """Exporters from `tf.estimator.Exporter`s and kind names ("latest", "best", "final")."""
  made = []
  for item in kinds_or_exporters:
    if isinstance(item, tf.estimator.Exporter):
      made.append(item)
      continue
    if item not in evaluation_settings.EXPORTER_KINDS:
      raise errors.ConfigError(f"exporter {item!r} is neither a tf.estimator.Exporter nor "
                               f"one of {evaluation_settings.EXPORTER_KINDS}.")
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
    self._exported = {}  # (exporter name, checkpoint) -> what it exported.

  def run(self, path, *, final=False):
    """Evaluates `path` (unless it was the last one evaluated) and exports; its metrics."""
    if not any(isinstance(e, best_checkpoint_keeper.Keeper) for e in self._spec.exporters or ()):
      return self._run(path, path, final)
    with best_checkpoint_keeper.pinned(path, self._estimator.model_dir) as readable:
      return self._run(path, readable, final)

  def _run(self, path, readable, final):
    """`run`, reading the checkpoint `path` from `readable`."""
    if path != self.last_path:
      try:
        metrics = self._estimator.evaluate(
            self._spec.input_fn, steps=self._spec.steps, name=self._spec.name,
            hooks=self._spec.hooks, checkpoint_path=readable)
      except errors.ConfigError:
        raise  # The eval input's fault (no example), not a checkpoint deleted meanwhile.
      except (tf.errors.NotFoundError, ValueError):
        if final or tf.io.gfile.exists(readable + ".index"):
          raise
        # Training saved newer ones and deleted it (keep_checkpoint_max) meanwhile.
        logging.info(command_line.line("%s was deleted before its evaluation ended; skipped"),
                     path)
        return None
      self.last_path, self.last_metrics = path, metrics
    base = os.path.join(self._estimator.model_dir, "export")
    for exporter in self._spec.exporters or ():
      if (exporter.name, path) in self._exported:  # Latest or best, at the final step.
        continue
      exported = exporter.export(self._estimator, os.path.join(base, exporter.name),
                                 readable, self.last_metrics, final)
      if exported:
        self._exported[(exporter.name, path)] = exported
        logging.info(command_line.line("exported %s (%s exporter)"),
                     exported.decode() if isinstance(exported, bytes) else exported,
                     exporter.name)
    return self.last_metrics

  @property
  def export_results(self):
    """What each exporter exported of the last checkpoint evaluated (None: nothing), as
    `tf.estimator.train_and_evaluate` returns them; [] before any evaluation."""
    if self.last_path is None:
      return []
    return [self._exported.get((e.name, self.last_path)) for e in self._spec.exporters or ()
            if not isinstance(e, best_checkpoint_keeper.Keeper)]


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
        except Abandoned as e:
          logging.warning(command_line.line("%s; a rerun evaluates the saved checkpoint"), e)
          return
        except Exception as e:  # pylint: disable=broad-except
          if (isinstance(e, (tf.errors.NotFoundError, OSError, ValueError)) and
              not isinstance(e, errors.ConfigError) and
              not tf.io.gfile.exists(path + ".index")):
            continue  # Deleted (keep_checkpoint_max) while it was exported.
          logging.error(command_line.line("evaluation during training failed, training goes "
                                          "on and then fails: %s"), e)
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
