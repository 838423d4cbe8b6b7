"""`train_and_evaluate`: one call that trains under any strategy and evaluates on the chief."""

import contextlib
import os
import time

import tensorflow as tf
from absl import logging

from estimator_dist import errors
from estimator_dist.strategies import base
from estimator_dist.strategies import factory
from estimator_dist.strategies import local
from estimator_dist.task import checkpoints
from estimator_dist.training import decorator
from estimator_dist.task import early_stopping
from estimator_dist.task import evaluation
from estimator_dist.training import hooks as hooks_lib
from estimator_dist.task import inputs
from estimator_dist.task import model_dir_lock
from estimator_dist.training import options as options_lib
from estimator_dist.task import own_port
from estimator_dist.task import summary
from estimator_dist.task import watchdog


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


def _model_fn_and_params(model, params):
  """(model_fn, params, warm start) to train; an Estimator gives its own, `params` win.

  The v2 Estimator subclasses tf.compat.v1's, so both kinds of canned Estimator count.
  `model_to_estimator` warm-starts from the Keras model's weights.
  """
  if isinstance(model, tf.compat.v1.estimator.Estimator):
    params = {**(model.params or {}), **(params or {})}
    return model._model_fn, params, model._warm_start_settings  # pylint: disable=protected-access
  decorator.check_model_fn(model)
  return model, dict(params or {}), None


def train_and_evaluate(model, train_input_fn, eval_input_fn=None, *, params=None, hooks=(),
                       serving_input_receiver_fn=None, options=None, adapter=None, **fields):
  """Trains under a strategy and returns the final eval metrics on the chief.

  Like `tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)`, the model
  and the input functions come first.

  Args:
    model: a model_fn (decorated with `distributed` or not) or an Estimator whose
      model_fn and params are used.
    train_input_fn: the single-machine input_fn, batched by the per-worker batch size.
    eval_input_fn: the evaluation input_fn; evaluation runs on the chief (or the
      evaluator task) over all of it, each example once.
    params: passed to the model_fn (over an Estimator's own).
    hooks: extra training hooks; `tf.estimator.experimental.stop_if_*` hooks among them
      stop every task together (see `early_stopping`).
    serving_input_receiver_fn: what the exported SavedModel takes as input, for the
      exporters named in options.exporters.
    options: a `TrainOptions`; `fields` are its fields given as keywords (strategy,
      model_dir, train_steps, ...), over `options` when both are given.
    adapter: an adapter (`create_strategy`, or one made by hand, which is started here)
      to use instead of options.strategy; also accepted as `strategy=`.

  Returns:
    The final evaluation metrics on the chief; None on other tasks or without
    eval_input_fn.
  """
  if isinstance(fields.get("strategy"), base.StrategyAdapter):  # An adapter as the strategy.
    adapter = fields.pop("strategy")
  if adapter is not None:
    fields["strategy"] = adapter.name
  opts = options.replace(**fields) if options is not None else (
      options_lib.TrainOptions(**fields))
  adapter = (adapter or factory.create_strategy(opts.strategy, **opts.strategy_options)).start()
  inputs.check_input_fn(train_input_fn, "train_input_fn")
  if eval_input_fn is not None:
    inputs.check_input_fn(eval_input_fn, "eval_input_fn")
  model_fn, params, warm_start = _model_fn_and_params(model, params)
  model_fn, rate_options = decorator.decorated(model_fn, lr_scaling=opts.lr_scaling,
                                               warmup_steps=opts.warmup_steps)
  if opts.learning_rate is not None:
    params[rate_options.lr_param] = opts.learning_rate
  model_dir, train_steps, batch_size = opts.model_dir, opts.train_steps, opts.batch_size

  checkpoint_interval = ({"save_checkpoints_steps": opts.save_checkpoints_steps}
                         if opts.save_checkpoints_steps else {})
  exporters = evaluation.exporters(opts.exporters, serving_input_receiver_fn,
                                   exports_to_keep=opts.exports_to_keep)
  hooks, stop_conditions = early_stopping.split_hooks(hooks)
  requested = early_stopping.requested_stop(model_dir)  # A sweep's pruner asks.
  if requested and eval_input_fn is not None:
    stop_conditions.append(requested)
  eval_spec = None
  if eval_input_fn is not None:
    eval_spec = tf.estimator.EvalSpec(eval_input_fn, steps=opts.eval_steps, exporters=exporters,
                                      start_delay_secs=0, throttle_secs=opts.eval_throttle_secs)
  elif exporters or opts.early_stopping or stop_conditions:
    raise errors.ConfigError("exporters and early stopping follow evaluations: pass an "
                             "eval_input_fn to train_and_evaluate.")
  throughput = ThroughputHook()
  evaluations = evaluation.Evaluations(
      _evaluating_estimator(model_fn, model_dir=model_dir, params=params), eval_spec)
  stop_together = None

  def train_with(adapter, more_hooks=()):
    """Builds the Estimator for `adapter` and trains; returns (adapter, metrics)."""
    nonlocal stop_together
    if opts.early_stopping or stop_conditions:
      decide = early_stopping.decision(opts.early_stopping, stop_conditions,
                                       os.path.join(model_dir, "eval"))
      stop_together = early_stopping.StopTogether(
          adapter, decide=decide if adapter.task.is_chief else None)
      more_hooks = (*more_hooks, stop_together)
    config = adapter.run_config(model_dir, tf_random_seed=opts.random_seed,
                                keep_checkpoint_max=opts.keep_checkpoint_max,
                                **checkpoint_interval)
    warm_start_from, warm_start_hooks = adapter.warm_start(warm_start)
    estimator = tf.estimator.Estimator(adapter.wrap_model_fn(model_fn), config=config,
                                       params=params, warm_start_from=warm_start_from)
    train_spec = tf.estimator.TrainSpec(
        adapter.wrap_input_fn(train_input_fn), max_steps=train_steps,
        hooks=[checkpoints.FitsTheModel(model_dir), hooks_lib.NanLossHook(model_dir),
               hooks_lib.PhaseHook(), hooks_lib.StepAdvances(runs=20 * adapter.runs_per_update),
               throughput,
               *hooks_lib.heartbeat_hooks(adapter.task), *warm_start_hooks, *more_hooks,
               *hooks],
        saving_listeners=[hooks_lib.FiniteCheckpoints(model_dir)])
    logging.info("estimator_dist: %s; batch %s per worker, %s per step; training to step %d",
                 adapter.describe(), batch_size, examples_per_step(adapter), train_steps)
    return adapter, adapter.train(estimator, train_spec, eval_spec)

  def examples_per_step(adapter):
    return (batch_size * (adapter.num_replicas if adapter.synchronous else 1)
            if batch_size else None)

  lock, complete = contextlib.nullcontext(), contextlib.nullcontext()
  if adapter.task.is_chief:  # The one writer of checkpoints.
    early_stopping.clear_marker(model_dir)
    complete = checkpoints.kept_complete(model_dir, _warn)
    if not model_dir_lock.held_by_launcher(model_dir):
      lock = model_dir_lock.held(model_dir, _warn)  # Else the launcher holds it and
      checkpoints.resume_point(model_dir, _warn)    # has checked the checkpoints.
  # The chief evaluates beside its training unless the job has an evaluator task.
  beside = (adapter.task.is_chief and eval_spec is not None and
            not adapter.task.num_tasks("evaluator"))
  evaluating = (evaluation.beside_training(evaluations, model_dir,
                                           throttle_secs=opts.eval_throttle_secs)
                if beside else contextlib.nullcontext())
  with lock, complete, own_port.named(adapter.task), evaluating:
    adapter, metrics = adapter.run_training(train_with, model_dir=model_dir)
  watchdog.reached("ended")  # Also when there was nothing left to train.
  if adapter.task.is_chief and stop_together and stop_together.stopped_at is not None:
    early_stopping.mark_stopped(model_dir, stop_together.stopped_at)
  adapter.after_training()
  if not adapter.task.is_chief or eval_spec is None:
    return None
  if beside:  # The final evaluation, and the final exports.
    metrics = evaluations.run(tf.train.latest_checkpoint(model_dir), final=True)
  elif not metrics or metrics.get("global_step", -1) < train_steps:
    metrics = evaluate(model_fn, eval_input_fn, model_dir=model_dir, params=params,
                       eval_steps=opts.eval_steps)
  # The step training ended at (an early stop ends before train_steps).
  _print_summary(adapter, int(metrics.get("global_step", train_steps)),
                 examples_per_step(adapter), throughput.steps_per_sec, metrics)
  return metrics


def evaluate(model_fn, eval_input_fn, *, model_dir, params=None, eval_steps=None,
             checkpoint_path=None):
  """Evaluates `checkpoint_path` (default: the latest of `model_dir`) in this process alone."""
  estimator = _evaluating_estimator(model_fn, model_dir=model_dir, params=params)
  return estimator.evaluate(eval_input_fn, steps=eval_steps, checkpoint_path=checkpoint_path)


def _evaluating_estimator(model_fn, *, model_dir, params):
  """An Estimator of this process alone over model_dir: it evaluates and exports."""
  with base.without_tf_config():
    config = tf.estimator.RunConfig(model_dir=model_dir)
  model_fn, _ = decorator.decorated(model_fn)
  return tf.estimator.Estimator(local.local_adapter().wrap_model_fn(model_fn), config=config,
                                params=params)


def _print_summary(adapter, steps, examples_per_step, steps_per_sec, metrics):
  fields = {"strategy": adapter.name, "workers": adapter.task.size,
            "replicas": adapter.num_replicas, "steps": steps,
            "global_batch": examples_per_step}
  if steps_per_sec:
    fields["steps/sec"] = f"{steps_per_sec:.2f}"
    if examples_per_step:
      fields["examples/sec"] = f"{steps_per_sec * examples_per_step:.1f}"
  for key in ("accuracy", "loss"):
    if key in metrics:
      fields[f"eval_{key}"] = f"{float(metrics[key]):.4f}"
  print(summary.format_line(fields), flush=True)


def _warn(message):
  logging.warning("estimator_dist: %s", message)
