"""Training that diverges or stalls stops, naming what happened; checkpoints stay good.

The model_fn wrapper puts the training loss in a graph collection. `NanLossHook` runs
before Estimator's own NaN check and stops training with the step and the last good
checkpoint. `FiniteCheckpoints` refuses to write a checkpoint of weights that are not
finite, so the last good checkpoint stays the latest one. `HeartbeatHook` lets the
launcher notice a task that stopped making progress (estimator_dist.contract.heartbeat).
"""

import dataclasses
import math
import os
import time

import tensorflow as tf
from absl import logging

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import heartbeat
from estimator_dist.task import watchdog

LOSS_COLLECTION = "estimator_dist_training_loss"


def record_loss(loss):
  """Called while the TRAIN graph is built: the loss the guards watch."""
  tf.compat.v1.add_to_collection(LOSS_COLLECTION, loss)


def _diverged(what, step, model_dir):
  latest = tf.train.latest_checkpoint(model_dir) if model_dir else None
  kept = (f"The latest checkpoint, {latest}, is from before it." if latest
          else "No checkpoint was written.")
  return errors.TrainingDiverged(
      f"training diverged: {what} at global step {step}. {kept} Lower the learning rate "
      f"(or its warmup), check the input for NaN or Inf, then train again from there.")


class NanLossHook(tf.estimator.SessionRunHook):
  """Stops training when the loss is NaN or infinite, naming the step."""

  def __init__(self, model_dir):
    self._model_dir = model_dir
    self._fetches = None

  def begin(self):
    losses = tf.compat.v1.get_collection(LOSS_COLLECTION)
    if losses:
      self._fetches = (losses[-1], tf.compat.v1.train.get_global_step())

  def before_run(self, run_context):
    return tf.estimator.SessionRunArgs(self._fetches) if self._fetches else None

  def after_run(self, run_context, run_values):
    if self._fetches:
      loss, step = run_values.results
      if not math.isfinite(float(loss)):
        raise _diverged(f"the loss is {float(loss)}", step, self._model_dir)


class FiniteCheckpoints(tf.estimator.CheckpointSaverListener):
  """Refuses to write a checkpoint whose trainable weights are not all finite."""

  def __init__(self, model_dir):
    self._model_dir = model_dir
    self._finite = None

  def begin(self):
    weights = tf.compat.v1.trainable_variables()
    if weights:
      self._finite = tf.reduce_all(
          [tf.reduce_all(tf.math.is_finite(tf.cast(w, tf.float32))) for w in weights])

  def before_save(self, session, global_step_value):
    if self._finite is not None and not session.run(self._finite):
      raise _diverged("the weights are not finite", global_step_value, self._model_dir)


def heartbeat_hooks(task, *, last_step, examples_per_step):
  """The heartbeat hook of this training task, if the launcher asked for heartbeats.
  `examples_per_step()`: the job's examples per global step (None: not known), asked
  once training runs (the input it counts is read as the graph is built)."""
  path = heartbeat.path_of(task, os.environ)
  return [HeartbeatHook(path, last_step=last_step,
                        examples_per_step=examples_per_step)] if path else []


class HeartbeatHook(tf.estimator.SessionRunHook):
  """Beats `path` at most every `every_secs` while training runs, with the global step of
  `last_step`; marks the heartbeat ended at the end."""

  def __init__(self, path, *, last_step, examples_per_step, every_secs=1.0):
    self._path, self._every_secs = path, every_secs
    self._last_step, self._examples_per_step = last_step, examples_per_step
    self._last, self._progress = None, None

  def begin(self):
    self._beat(heartbeat.begin, self._path)
    self._global_step = tf.compat.v1.train.get_global_step()
    self._trainable_bytes = sum(  # Each variable once, however many replicas hold it.
        v.shape.num_elements() * v.dtype.size for v in tf.compat.v1.trainable_variables()
        if v.shape.is_fully_defined()) or None

  def before_run(self, run_context):
    return tf.estimator.SessionRunArgs(self._global_step)

  def after_run(self, run_context, run_values):
    now = time.monotonic()
    self._progress = heartbeat.Progress(
        step=int(run_values.results), last_step=self._last_step,
        examples_per_step=self._examples_per_step(), trainable_bytes=self._trainable_bytes,
        time=time.time())
    if self._last is None or now - self._last >= self._every_secs:
      self._beat(heartbeat.beat, self._path, self._progress)
      self._last = now

  def end(self, session):
    if self._progress is not None:  # The last run's fetch read the step before it ran.
      try:
        step = int(session.run(self._global_step))
      except tf.errors.OpError:
        step = self._progress.step
      self._progress = dataclasses.replace(self._progress, step=step, time=time.time())
    self._beat(heartbeat.end, self._path, self._progress)

  def _beat(self, write, *args):
    try:
      write(*args)
    except OSError as e:  # The launcher's directory, full or gone: training goes on.
      logging.warning(command_line.line("heartbeat %s not written: %s"), self._path, e)


class StepAdvances(tf.estimator.SessionRunHook):
  """Stops a train_op that never advances the global step, which would train forever.

  `runs` session runs may pass with the global step unchanged (training passes 20 times
  the runs of one update under gradient accumulation); then training stops with the fix.
  """

  def __init__(self, *, runs):
    self._runs = runs

  def begin(self):
    self._step = tf.compat.v1.train.get_global_step()
    self._start, self._unchanged = None, 0

  def before_run(self, run_context):
    if self._unchanged is not None:  # None once the step has moved: nothing to watch.
      return tf.estimator.SessionRunArgs(self._step)
    return None

  def after_run(self, run_context, run_values):
    if self._unchanged is None:
      return
    step = int(run_values.results)
    if self._start is None:
      self._start = step
    elif step != self._start:
      self._unchanged = None
      return
    self._unchanged += 1
    if self._unchanged >= self._runs:
      raise errors.ConfigError(
          f"the train_op does not advance the global step: it is still {step} after "
          f"{self._unchanged} session runs, so training would never reach its last "
          f"step. Pass the global step to the optimizer: optimizer.minimize(loss, "
          f"global_step=tf.compat.v1.train.get_global_step()) (or apply_gradients(..., "
          f"global_step=...)); a model_fn that accumulates gradients itself must advance "
          f"it at least every {self._runs} runs.")


class PhaseHook(tf.estimator.SessionRunHook):
  """Tells the watchdog when a round of training begins (a later train() of the program),
  when the session exists and when the first step has run."""

  def begin(self):
    watchdog.new_round()

  def after_create_session(self, session, coord):
    watchdog.reached("session created")

  def after_run(self, run_context, run_values):
    watchdog.reached("training")


class ThroughputHook(tf.estimator.SessionRunHook):
  """Measures global steps per second, leaving out the first `skip_steps` steps."""

  def __init__(self, skip_steps=5):
    self._skip_steps = skip_steps
    self.steps_per_sec = None

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()

  def after_create_session(self, session, coord):
    self._runs, self._start = 0, None

  def before_run(self, run_context):
    return tf.estimator.SessionRunArgs(self._global_step)

  def after_run(self, run_context, run_values):
    step, now = run_values.results, time.monotonic()
    self._runs += 1
    if self._runs == self._skip_steps:
      self._start = (step, now)
    elif self._start and step > self._start[0]:
      self.steps_per_sec = (step - self._start[0]) / (now - self._start[1])
