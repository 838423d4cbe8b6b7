"""The adapter interface every backend implements; its defaults are one local process.

An adapter's life has two steps:
- construction (`Adapter(task=..., options=...)`) checks and stores; it has no side
  effects, so a task can be validated anywhere;
- `start()` is the one step with side effects: it reads the task from the environment
  when none was given, publishes the validated cluster to TF_CONFIG, pins this process
  to its CPUs and starts the backend (a tf.distribute strategy, `hvd.init`). A run's
  `start()` (or `create_strategy`) calls it, through the factory, which records the
  adapter a process started from its environment.
"""

import contextlib
import functools
import os

import tensorflow as tf
from tensorflow.python.autograph.impl import api as autograph_api  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import errors
from estimator_dist.contract import environment
from estimator_dist.strategies import checks
from estimator_dist.strategies import context
from estimator_dist.strategies import options as options_lib
from estimator_dist.strategies import traits as traits_lib
from estimator_dist.task import inputs
from estimator_dist.task import own_address
from estimator_dist.task import own_port
from estimator_dist.task import placement
from estimator_dist.task import quick_exit
from estimator_dist.task import watchdog


# Set on an optimizer whose learning rate its program scaled itself (the optimizer inside
# the program's own Horovod DistributedOptimizer): the decorator leaves that rate alone.
RATE_SCALED_BY_PROGRAM = "_estimator_dist_rate_scaled_by_program"



@contextlib.contextmanager
def without_tf_config():
  saved = os.environ.pop("TF_CONFIG", None)
  try:
    yield
  finally:
    if saved is not None:
      os.environ["TF_CONFIG"] = saved


class StrategyAdapter:
  """What a backend needs around an Estimator.

  An adapter knows this process's task, builds the RunConfig, wraps the model_fn and
  input_fn, supplies training hooks, and runs this task's part of `train_and_evaluate`.
  Subclasses set `name` and `Options` and override the methods below.
  """
  name = "local"
  Options = options_lib.Options
  # RunConfig fields that only the chief's RunConfig keeps; the other tasks' are None.
  chief_only_fields = ()

  def __init__(self, *, task=None, options=None):
    self.traits = traits_lib.of(self.name)
    self.options = self.Options() if options is None else options
    if not isinstance(self.options, self.Options):
      raise errors.ConfigError(f"strategy {self.name!r} takes {self.Options.__name__}, "
                               f"got {type(self.options).__name__}.")
    self.task = None if task is None else checks.check_task(self.traits, task)
    self.cpus = None
    self.started = False

  @property
  def synchronous(self) -> bool:
    return self.traits.synchronous

  # -- the one step with side effects ------------------------------------------------------
  def start(self):
    """Reads the task if none was given, publishes it, pins CPUs, starts the backend."""
    if self.started:
      return self
    from_environment = self.task is None
    if from_environment:
      self.task = checks.check_task(self.traits, self.task_from_environment())
      if self.traits.uses_tf_config and self.task.source in ("TF_CONFIG", "SLURM"):
        # TensorFlow reads the cluster from TF_CONFIG: publish the one validated here,
        # which may come from SLURM, and names a legacy 'master' 'chief'.
        os.environ["TF_CONFIG"] = self.task.tf_config()
      if self.traits.uses_tf_config:
        own_address.bind(self.task)  # May start this program again, bound.
    own_port.check_free(self.task)  # Before this task serves or contacts a peer.
    if from_environment:
      watchdog.start(self.task)  # Before the backend, which may wait for its peers.
      quick_exit.install()
    self.cpus = placement.apply(self.options.cpu_affinity, self.task)
    if self.traits.uses_tf_config:  # Horovod's ranks take theirs in session_config.
      placement.apply_gpus(self.task)
    with own_port.named(self.task):
      self.start_backend()
    self.started = True
    return self

  def task_from_environment(self):
    """This process's task as the environment describes it (may start the backend)."""
    return environment.task_from_environment()

  def start_backend(self):
    """Starts what the backend needs before any other TensorFlow op runs."""

  # -- what the job looks like -------------------------------------------------------------
  @property
  def num_replicas(self) -> int:
    """Replicas whose gradients make up one update (the learning-rate scaling factor)."""
    return 1

  @property
  def runs_per_update(self) -> int:
    """Session runs that make one update of the weights (gradient accumulation)."""
    return 1

  @property
  def preempted_exit_code(self) -> int:
    """This task's exit code once it saved (or acknowledged the chief's save) on a
    preemption."""
    return errors.PREEMPTED_EXIT_CODE

  @property
  def default_lr_scaling(self) -> str:
    return "linear" if self.synchronous else "none"

  def describe(self) -> str:
    return f"{self.name} strategy, {self.task.describe()}, {self.num_replicas} replica(s)"

  # -- Estimator pieces --------------------------------------------------------------------
  def session_config(self):
    return tf.compat.v1.ConfigProto(
        allow_soft_placement=True,
        intra_op_parallelism_threads=self.options.intra_op_threads,
        inter_op_parallelism_threads=self.options.inter_op_threads)

  def distribute_strategy(self):
    return None

  def run_config(self, model_dir, **kwargs) -> tf.estimator.RunConfig:
    kwargs.setdefault("session_config", self.session_config())
    strategy = self.distribute_strategy()
    if strategy is not None:
      kwargs["train_distribute"] = strategy
    if self.traits.uses_tf_config:
      return tf.estimator.RunConfig(model_dir=model_dir, **kwargs)
    with without_tf_config():  # A one-task cluster (one Kubernetes pod) is one process.
      return tf.estimator.RunConfig(model_dir=model_dir, **kwargs)

  def wrap_model_fn(self, model_fn):
    """The model_fn Estimator calls: `model_fn` (decorated) built with this adapter active.

    Run as the single-worker Estimator runs it: not converted by AutoGraph, whose status
    stays unspecified inside (Keras layers convert their own `call` as there). A
    strategy's call_for_each_replica would convert the model_fn and the toolkit's code
    below it (about a second of a task's start).
    """
    @autograph_api.call_with_unspecified_conversion_status
    def build(features, labels, mode, params, config):
      with context.active(self):
        return model_fn(features, labels, mode, params, config)

    def model_fn_for_estimator(features, labels, mode, params, config):  # Its signature.
      return build(features, labels, mode, params, config)
    return model_fn_for_estimator

  def wrap_input_fn(self, input_fn):
    """The input_fn Estimator calls: this worker's shard, repeated for training."""
    return inputs.wrap_input_fn(input_fn, self.input_context)

  def input_context(self, estimator_context):
    """The tf.distribute.InputContext of this worker (None: one input pipeline)."""
    return estimator_context

  # -- while the model_fn builds its training graph -----------------------------------------
  def gradient_context(self):
    """Entered while the user's model_fn builds its TRAIN graph."""
    return contextlib.nullcontext()

  def check_train_spec(self, spec):
    """Raises if the TRAIN EstimatorSpec cannot train correctly under this strategy."""

  def training_hooks(self):
    return []

  def warm_start(self, settings):
    """(warm_start_from for the Estimator, training hooks) that start from `settings`."""
    return settings, []

  def stop_requested(self, requested):
    """What the tasks fed into `requested` (an int32 scalar), summed or the largest: at
    least the largest; every task runs it at the same session run. One process: the
    request itself."""
    return requested

  # -- running -----------------------------------------------------------------------------
  def run_training(self, train_with, *, model_dir):
    """Runs `train_with(adapter, extra_hooks)`, which trains once into `model_dir`.

    Returns its result. A backend that trains in rounds (elastic Horovod) calls it once
    per round.
    """
    del model_dir  # One round.
    return train_with(self, ())

  def train(self, estimator, train_spec, eval_spec):
    """Runs this training task's share of training (an evaluator task evaluates instead,
    in the run). Returns eval metrics if it evaluated the end."""
    if not estimator.config.cluster_spec:  # One process: the chief evaluates beside it.
      estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                      hooks=train_spec.hooks, saving_listeners=train_spec.saving_listeners)
      return None
    if eval_spec is None:
      # A TF_CONFIG cluster trains only through train_and_evaluate; without an evaluator
      # task its eval spec is never used.
      eval_spec = tf.estimator.EvalSpec(train_spec.input_fn)
    if not self.synchronous:  # Estimator refuses saving listeners under multi_worker.
      # TensorFlow's distribute coordinator trains a deep copy of the Estimator without the
      # TrainSpec's saving listeners: the copy's train() gets (copies of) them back.
      estimator.train = functools.partial(_train_with_listeners, estimator.train,
                                          train_spec.saving_listeners)
    result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    return result[0] if result else None

  def after_training(self):
    """Called on every task when its training ends, before the chief's final evaluation."""


def _train_with_listeners(train, listeners, *args, saving_listeners=None, **kwargs):
  return train(*args, saving_listeners=[*(saving_listeners or ()), *listeners], **kwargs)
