"""`TrainingRun`: one task's part of a job, built from the model, its inputs and options;
`start()` starts the backend and `run()` trains, evaluates or serves the task's role."""

import collections.abc
import contextlib

import tensorflow as tf
from absl import logging

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import chief_model_dir
from estimator_dist.strategies import factory
from estimator_dist.task import best_checkpoint_keeper
from estimator_dist.task import early_stopping
from estimator_dist.task import evaluation
from estimator_dist.task import evaluator
from estimator_dist.task import inputs
from estimator_dist.task import preemption
from estimator_dist.task import preemption_save
from estimator_dist.task import watchdog
from estimator_dist.training import decorator
from estimator_dist.training import evaluate_alone
from estimator_dist.training import final_summary
from estimator_dist.training import job_tracking
from estimator_dist.training import one_pass
from estimator_dist.training import options as options_lib
from estimator_dist.training import parts
from estimator_dist.training import run_config_merge
from estimator_dist.training import run_state


def _model_fn_and_params(model, params):
  """(model_fn, params, warm start, RunConfig) to train; an Estimator gives its own,
  `params` win over its params (`run_config_merge` says how its RunConfig counts).

  The v2 Estimator subclasses tf.compat.v1's, so both kinds of canned Estimator count.
  `model_to_estimator` warm-starts from the Keras model's weights.
  """
  if isinstance(model, tf.compat.v1.estimator.Estimator):
    own = model.params
    if isinstance(own, collections.abc.Mapping) and isinstance(params, collections.abc.Mapping):
      params = {**own, **params}
    elif params is None:
      params = own  # Of any type TensorFlow accepts: the model_fn gets it as it is.
    # pylint: disable-next=protected-access
    return model._model_fn, decorator.copied_params(params), model._warm_start_settings, model._config
  decorator.check_model_fn(model)
  return model, decorator.copied_params(params), None, None


class TrainingRun:
  """One run of `train_and_evaluate`: checked when built (nothing starts), then `start()`
  starts the backend, then `run()` trains, evaluates or serves the task's role once.

  As orbit's Controller is built from train() and evaluate(), a run is built from
  `estimator(adapter)` and `train_spec(adapter)` for one round of training (a backend
  that trains in rounds, elastic Horovod, asks for them again with a renewed adapter),
  and `final_metrics()`. What each feature adds to training (hooks, saving listeners,
  guards around training and around each round) is one of its `parts` (`training/parts`).
  """

  def __init__(self, *, model, train_input_fn, options, eval_input_fn=None, params=None,
               hooks=(), serving_input_receiver_fn=None, adapter=None, saving_listeners=(),
               eval_hooks=()):
    if not isinstance(options, options_lib.TrainOptions):
      raise errors.ConfigError(f"options must be a TrainOptions, got {type(options).__name__}; "
                               f"use ed.options_from_flags() or ed.TrainOptions(...).")
    inputs.check_input_fn(train_input_fn, "train_input_fn")
    if eval_input_fn is not None:
      inputs.check_input_fn(eval_input_fn, "eval_input_fn")
    model_fn, self.params, self._warm_start, config = _model_fn_and_params(model, params)
    self._run_config = run_config_merge.checked(config, options)
    self.model_fn, rate_options = decorator.decorated(
        model_fn, lr_scaling=options.lr_scaling, warmup_steps=options.warmup_steps)
    if options.learning_rate is not None:
      if not isinstance(self.params, collections.abc.MutableMapping):
        raise errors.ConfigError(
            f"--learning_rate sets params['{rate_options.lr_param}'], but the program's "
            f"params is a {type(self.params).__name__}, not a dict: set the rate where "
            f"the program reads it.")
      self.params[rate_options.lr_param] = options.learning_rate
    self.options = options
    self._hooks, self._stop_conditions = early_stopping.split_hooks(hooks)
    if eval_input_fn is not None:  # A sweep's pruner asks; a misspelt best metric fails.
      self._stop_conditions += filter(None, (
          early_stopping.requested_stop(options.model_dir),
          best_checkpoint_keeper.metric_watch(options.best_checkpoints, options.model_dir)))
    exporters = evaluation.exporters(options.exporters, serving_input_receiver_fn,
                                     exports_to_keep=options.exports_to_keep)
    if options.best_checkpoints:
      exporters = (*exporters, best_checkpoint_keeper.Keeper(options.best_checkpoints))
    self.eval_spec = None
    if eval_input_fn is not None:
      watch = evaluation.EvaluationWatch(input_fn=eval_input_fn, steps=options.eval_steps,
                                         timeout_secs=options.eval_timeout_secs)
      self.eval_spec = tf.estimator.EvalSpec(
          inputs.evaluation_input_fn(eval_input_fn), steps=options.eval_steps,
          exporters=exporters, start_delay_secs=0, throttle_secs=options.eval_throttle_secs,
          hooks=[watch, *eval_hooks])
    elif exporters or options.early_stopping or self._stop_conditions:
      raise errors.ConfigError("exporters, best checkpoints and early stopping follow "
                               "evaluations: pass an eval_input_fn to train_and_evaluate.")
    self._train_input_fn, self._eval_input_fn = train_input_fn, eval_input_fn
    self._saving_listeners, self._eval_hooks = tuple(saving_listeners), tuple(eval_hooks)
    self._given_adapter = adapter
    self.adapter = None  # Set by start().
    self.summary = None  # The chief's summary fields, once it has printed them.
    self.evaluations = evaluation.Evaluations(
        evaluate_alone.evaluating_estimator(self.model_fn, model_dir=options.model_dir,
                                            params=self.params),
        self.eval_spec)
    # The run's parts, in the order they run (`training/parts`). Three are read back after
    # training: the throughput, how the round stopped, whether the chief evaluated beside.
    model_dir = options.model_dir
    self._progress = parts.Progress(last_step=lambda: self.options.train_steps,
                                    examples_per_step=self._examples_per_step)
    self._stop = parts.StopTogether(early_stopping_options=options.early_stopping,
                                    conditions=self._stop_conditions, model_dir=model_dir)
    self._beside = parts.EvaluationBeside(self.evaluations, eval_spec=self.eval_spec,
                                          model_dir=model_dir,
                                          throttle_secs=options.eval_throttle_secs)
    self.parts = (parts.ModelDir(model_dir, strategy=options.strategy),
                  parts.Divergence(model_dir), self._progress,
                  parts.Profiling(steps=options.profile_steps, tasks=options.profile_tasks,
                                  model_dir=model_dir),
                  self._stop, parts.OwnPort(), self._beside, parts.PeerLoss())

  def start(self):
    """Starts the backend and returns its adapter: the one step with side effects.

    Starting reads this process's task from the environment, may start the program again
    bound to its address, starts the watchdog, pins CPUs and starts the tf.distribute
    strategy or Horovod (see `StrategyAdapter.start`). The adapter given to the run, or
    the one this process already started for the same strategy and options, is used.
    """
    options = self.options
    self.adapter = factory.start(
        self._given_adapter or factory.adapter_for(options.strategy, options.backend_options))
    task = self.adapter.task
    self.options = options = one_pass.resolved(options, self._train_input_fn, self.adapter,
                                               params=self.params, config=self._run_config)
    if task.role == "evaluator" and self.eval_spec is None:
      raise errors.ConfigError(
          "TF_CONFIG has an evaluator task but no eval_input_fn was given. Pass "
          "eval_input_fn to train_and_evaluate, or drop the evaluator (launcher: no "
          "--evaluator).")
    if self.eval_spec is not None and (task.is_chief or task.role == "evaluator"):
      evaluation.check_eval_input(self._eval_input_fn, steps=options.eval_steps,
                                  params=self.params)
      if options.best_checkpoints:
        best_checkpoint_keeper.prepare(options.model_dir, options.best_checkpoints)
    return self.adapter

  def estimator(self, adapter, *, warm_start_from=None):
    """The Estimator of one round of training under `adapter`."""
    config = run_config_merge.run_config(adapter, self.options, self._run_config)
    return tf.estimator.Estimator(adapter.wrap_model_fn(self.model_fn), config=config,
                                  params=self.params, warm_start_from=warm_start_from)

  def train_spec(self, adapter, more_hooks=()):
    """The TrainSpec of one round: the parts' hooks, the adapter's (`more_hooks`), the
    hooks of the parts that decide after them (`Part.after_the_adapters`), the user's."""
    ours = [(part.after_the_adapters, hook) for part in self.parts
            for hook in part.hooks(adapter)]
    return tf.estimator.TrainSpec(
        adapter.wrap_input_fn(self._train_input_fn), max_steps=self.options.train_steps,
        hooks=[*(hook for late, hook in ours if not late), *more_hooks,
               *(hook for late, hook in ours if late), *self._hooks],
        saving_listeners=[*(listener for part in self.parts
                            for listener in part.saving_listeners(adapter)),
                          *self._saving_listeners])

  def _train_round(self, adapter, more_hooks=()):
    """Trains one round under `adapter`; returns (adapter, metrics)."""
    warm_start_from, warm_start_hooks = adapter.warm_start(self._warm_start)
    estimator = self.estimator(adapter, warm_start_from=warm_start_from)
    train_spec = self.train_spec(adapter, (*warm_start_hooks, *more_hooks))
    logging.info(command_line.line("%s; batch %s per worker, %s per step; training to step %d"),
                 adapter.describe(), self.options.batch_size or "read from the input",
                 self._examples_per_step(adapter) or "that times the replicas",
                 self.options.train_steps)
    with contextlib.ExitStack() as stack:
      for part in self.parts:
        stack.enter_context(part.around_round(adapter))
      return adapter, adapter.train(estimator, train_spec, self.eval_spec)

  def _examples_per_step(self, adapter):
    """The job's examples per global step: the batch the options or the input give."""
    batch_size = self.options.batch_size or inputs.training_batch()
    return (batch_size * (adapter.num_replicas if adapter.synchronous else 1)
            if batch_size else None)

  def final_metrics(self, adapter, metrics):
    """The chief's final evaluation (and exports) once training ended; None elsewhere."""
    if not adapter.task.is_chief or self.eval_spec is None:
      return None
    model_dir, train_steps = self.options.model_dir, self.options.train_steps
    if self._beside.started:
      metrics = self.evaluations.run(tf.train.latest_checkpoint(model_dir), final=True)
    elif not metrics or metrics.get("global_step", -1) < train_steps:
      metrics = evaluate_alone.evaluate(
          self.model_fn, self._eval_input_fn, model_dir=model_dir, params=self.params,
          eval_steps=self.options.eval_steps, timeout_secs=self.options.eval_timeout_secs,
          hooks=self._eval_hooks)
    # The step training ended at (an early stop ends before train_steps).
    self.summary = final_summary.print_summary(
        adapter, int(metrics.get("global_step", train_steps)),
        self._examples_per_step(adapter), self._progress.steps_per_sec, metrics)
    return metrics

  def _end_preempted(self, adapter, step):
    """After a stop on preemption (the chief's saver wrote its last checkpoint as training
    ended): every task exits (Preempted), the chief last (`preemption_save`)."""
    preemption.ignore()  # Saved (the chief) or done (the others): no signal ends it now.
    model_dir, task, grace = self.options.model_dir, adapter.task, preemption.remaining_secs()
    adapter.after_training()
    if task.is_chief:
      print(command_line.line(f"preempted at global step {step}: saved "
                              f"{tf.train.latest_checkpoint(model_dir)}; run the same "
                              f"command again to resume from it"), flush=True)
      preemption_save.end_on_chief(task, step=step, timeout_secs=grace)
    else:
      preemption_save.end_elsewhere(task, timeout_secs=grace)
    raise preemption.Preempted(adapter.preempted_exit_code)

  def run(self):
    """Trains this task's share (or, on an evaluator task, evaluates until training ends),
    then returns the chief's final metrics; the chief writes the job's parameters, and its
    MLflow run where asked (job_tracking)."""
    if self.adapter is None:
      raise RuntimeError("TrainingRun.run() before start(): start() starts the backend.")
    tracked = None
    if self.adapter.task.is_chief:
      chief_model_dir.write(self.options.model_dir)  # The launcher learns where it trains.
      params = job_tracking.write_params(task=self.adapter.task, options=self.options,
                                         examples_per_step=self._examples_per_step(self.adapter))
      tracked = job_tracking.start(params=params, model_dir=self.options.model_dir)
    try:
      with preemption.watched(), run_state.entered():
        metrics = self._run()
    except BaseException as e:
      if tracked:
        tracked.failed(e)
      raise
    if tracked:
      tracked.finished(self.summary)
    return metrics

  def _run(self):
    with contextlib.ExitStack() as guards:
      for part in self.parts:
        guards.enter_context(part.guard(self.adapter))
      if self.adapter.task.role == "evaluator":  # It evaluates each new checkpoint.
        return evaluator.evaluate_until(self.estimator(self.adapter), self.eval_spec,
                                        task=self.adapter.task, max_steps=self.options.train_steps)
      adapter, metrics = self.adapter.run_training(self._train_round,
                                                   model_dir=self.options.model_dir)
    watchdog.reached("ended")  # Also when there was nothing left to train.
    stop = self._stop
    if stop.preempted:
      self._end_preempted(adapter, stop.stopped_at)
    if adapter.task.is_chief and stop.stopped_at is not None:
      early_stopping.mark_stopped(self.options.model_dir, stop.stopped_at)
    adapter.after_training()
    return self.final_metrics(adapter, metrics)

