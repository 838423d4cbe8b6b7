"""`train_and_evaluate`: one call that trains under any strategy and evaluates on the chief."""

import time

import tensorflow as tf
from absl import logging

from estimator_dist import errors
from estimator_dist import guards
from estimator_dist import decorator
from estimator_dist import elastic
from estimator_dist import inputs
from estimator_dist import summary
from estimator_dist.strategies import base
from estimator_dist.strategies import factory


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


def _model_fn_and_params(model_fn_or_estimator, params):
  """The model_fn and params to train; an Estimator gives its own, `params` win."""
  if isinstance(model_fn_or_estimator, tf.estimator.Estimator):
    est = model_fn_or_estimator
    params = {**(est.params or {}), **(params or {})}
    return est._model_fn, params  # pylint: disable=protected-access
  decorator.check_model_fn(model_fn_or_estimator)
  return model_fn_or_estimator, dict(params or {})


def _decorated(model_fn, lr_scaling, warmup_steps):
  """(`model_fn` decorated with the program's lr options over the decorator's, lr_param)."""
  options = dict(getattr(model_fn, decorator._OPTIONS_ATTR, {}))  # pylint: disable=protected-access
  original = options.pop("model_fn", model_fn)
  if lr_scaling is not None:
    options["lr_scaling"] = lr_scaling
  if warmup_steps is not None:
    options["warmup_steps"] = warmup_steps
  return decorator.distributed(original, **options), options.get("lr_param", "learning_rate")


def train_and_evaluate(model_fn_or_estimator, train_input_fn, eval_input_fn=None, *,
                       strategy="local", model_dir, train_steps, eval_steps=None,
                       params=None, learning_rate=None,
                       lr_scaling=None, warmup_steps=None, batch_size=None,
                       save_checkpoints_steps=None, keep_checkpoint_max=5,
                       eval_throttle_secs=60, random_seed=0,
                       hooks=(), strategy_options=None):
  """Trains under `strategy` and returns the final eval metrics on the chief.

  Args:
    model_fn_or_estimator: a model_fn (decorated with `distributed` or not) or an
      Estimator whose model_fn and params are used.
    train_input_fn: the single-machine input_fn, batched by the per-worker batch size.
    eval_input_fn: the evaluation input_fn; evaluation runs on the chief (or the
      evaluator task) over all of it, each example once.
    strategy: a strategy name (see `create_strategy`) or an adapter it returned.
    model_dir: where checkpoints and summaries go; shared by all tasks.
    train_steps: the global step to train to (one synchronous update is one step).
    eval_steps: batches to evaluate; None evaluates the whole eval input.
    params: passed to the model_fn.
    learning_rate: the single-worker rate; when given, sets the params key that the
      decorator scales (its `lr_param`, "learning_rate" by default).
    lr_scaling, warmup_steps: override the decorator's options when given.
    batch_size: the per-worker batch size, for the logs and examples/sec.
    save_checkpoints_steps: checkpoint interval (RunConfig's default when None).
    keep_checkpoint_max: newest checkpoints kept; 0 keeps all.
    eval_throttle_secs: least seconds between evaluations during training.
    random_seed: the graph seed of every task; one seed everywhere keeps the
      workers' shuffle orders equal, which sharding relies on.
    hooks: extra training hooks.
    strategy_options: keyword options of the strategy adapter.

  Returns:
    The final evaluation metrics on the chief; None on other tasks or without
    eval_input_fn.
  """
  adapter = strategy if isinstance(strategy, base.StrategyAdapter) else (
      factory.create_strategy(strategy, **(strategy_options or {})))
  errors.check_positive("train_steps", train_steps)
  errors.check_positive("eval_steps", eval_steps, allow_none=True)
  errors.check_positive("batch_size", batch_size, allow_none=True)
  errors.check_positive("save_checkpoints_steps", save_checkpoints_steps, allow_none=True)
  if not model_dir:
    raise errors.ConfigError("model_dir must name a directory that every task can reach.")
  inputs.check_input_fn(train_input_fn, "train_input_fn")
  if eval_input_fn is not None:
    inputs.check_input_fn(eval_input_fn, "eval_input_fn")
  model_fn, params = _model_fn_and_params(model_fn_or_estimator, params)
  model_fn, lr_param = _decorated(model_fn, lr_scaling, warmup_steps)
  if learning_rate is not None:
    params[lr_param] = learning_rate

  checkpoints = ({"save_checkpoints_steps": save_checkpoints_steps}
                 if save_checkpoints_steps else {})
  eval_spec = None
  if eval_input_fn is not None:
    eval_spec = tf.estimator.EvalSpec(eval_input_fn, steps=eval_steps, start_delay_secs=0,
                                      throttle_secs=eval_throttle_secs)
  throughput = ThroughputHook()

  def train_with(adapter, more_hooks=()):
    """Builds the Estimator for `adapter` and trains; returns (adapter, metrics)."""
    config = adapter.run_config(model_dir, tf_random_seed=random_seed,
                                keep_checkpoint_max=keep_checkpoint_max, **checkpoints)
    estimator = tf.estimator.Estimator(adapter.wrap_model_fn(model_fn), config=config,
                                       params=params)
    train_spec = tf.estimator.TrainSpec(
        adapter.wrap_input_fn(train_input_fn), max_steps=train_steps,
        hooks=[guards.NanLossHook(model_dir), throughput,
               *guards.heartbeat_hooks(adapter.task), *more_hooks, *hooks],
        saving_listeners=[guards.FiniteCheckpoints(model_dir)])
    logging.info("estimator_dist: %s; batch %s per worker, %s per step; training to step %d",
                 adapter.describe(), batch_size, examples_per_step(adapter), train_steps)
    return adapter, adapter.train(estimator, train_spec, eval_spec)

  def examples_per_step(adapter):
    return (batch_size * (adapter.num_replicas if adapter.synchronous else 1)
            if batch_size else None)

  if elastic.enabled(adapter):
    adapter, metrics = elastic.run(adapter, train_with, model_dir)
  else:
    adapter, metrics = train_with(adapter)
  adapter.after_training()
  if not adapter.task.is_chief or eval_spec is None:
    return None
  if not metrics or metrics.get("global_step", -1) < train_steps:
    metrics = evaluate(model_fn, eval_input_fn, model_dir=model_dir, params=params,
                       eval_steps=eval_steps)
  _print_summary(adapter, train_steps, examples_per_step(adapter), throughput.steps_per_sec,
                 metrics)
  return metrics


def evaluate(model_fn, eval_input_fn, *, model_dir, params=None, eval_steps=None,
             checkpoint_path=None):
  """Evaluates `checkpoint_path` (default: the latest of `model_dir`) in this process alone."""
  with base.without_tf_config():
    config = tf.estimator.RunConfig(model_dir=model_dir)
  local = base.local_adapter()
  estimator = tf.estimator.Estimator(local.wrap_model_fn(model_fn), config=config,
                                     params=params)
  return estimator.evaluate(eval_input_fn, steps=eval_steps, checkpoint_path=checkpoint_path)


def _print_summary(adapter, train_steps, examples_per_step, steps_per_sec, metrics):
  fields = {"strategy": adapter.name, "workers": adapter.task.size,
            "replicas": adapter.num_replicas, "steps": train_steps,
            "global_batch": examples_per_step}
  if steps_per_sec:
    fields["steps/sec"] = f"{steps_per_sec:.2f}"
    if examples_per_step:
      fields["examples/sec"] = f"{steps_per_sec * examples_per_step:.1f}"
  for key in ("accuracy", "loss"):
    if key in metrics:
      fields[f"eval_{key}"] = f"{float(metrics[key]):.4f}"
  print(summary.format_line(fields), flush=True)
