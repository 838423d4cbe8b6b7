"""The adapter interface every backend implements, and the local (single-process) one."""

import contextlib
import json
import os
import threading

import tensorflow as tf

from estimator_dist import cluster as cluster_lib
from estimator_dist import errors
from estimator_dist import inputs
from estimator_dist import placement

_ACTIVE = threading.local()


def current_adapter():
  """The adapter whose model_fn is being built on this thread (None outside one)."""
  return getattr(_ACTIVE, "adapter", None)


@contextlib.contextmanager
def _active(adapter):
  previous, _ACTIVE.adapter = current_adapter(), adapter
  try:
    yield
  finally:
    _ACTIVE.adapter = previous


def refuse_cluster(name, task):
  """A one-process strategy must not run as one of several tasks: each would train alone."""
  if task.source == "horovod" and task.size > 1:
    raise cluster_lib.ClusterConfigError(
        f"strategy '{name}' trains in one process, but this is rank {task.rank} of "
        f"{task.size} started by horovodrun or mpirun, so every rank would train the same "
        f"model alone. Use --strategy=horovod, or start one process.")
  if task.source == "SLURM":
    raise cluster_lib.ClusterConfigError(
        f"strategy '{name}' trains in one process, but this is task {task.rank} of a SLURM "
        f"step of {sum(map(len, task.cluster.values()))} tasks, so every task would train "
        f"the same model alone. Start it with `srun --ntasks=1` (estimator-dist slurm does).")
  alone = dict(task.cluster) in ({}, {"chief": task.cluster.get("chief")})
  if not alone:
    raise cluster_lib.ClusterConfigError(
        f"strategy '{name}' does not use TF_CONFIG, but TF_CONFIG describes a cluster "
        f"{sorted(task.cluster)}, which Estimator would wait for. Unset TF_CONFIG (the launcher "
        f"does), or pick multi_worker or parameter_server to train on that cluster.")


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

  An adapter knows this process's task, builds the RunConfig, wraps the model_fn
  and input_fn, supplies training hooks, and runs this task's part of
  `train_and_evaluate`. Subclasses override the hooks below; the defaults are
  those of one local process.
  """
  name = "local"
  synchronous = True
  # Roles the strategy accepts in a cluster description, and whether it needs ps.
  allowed_roles = ()
  needs_ps = False

  def __init__(self, task=None, intra_op_threads=0, inter_op_threads=0, cpu_affinity="auto"):
    from_environment = task is None
    self.task = self._task_from_environment() if from_environment else task
    self.intra_op_threads = intra_op_threads
    self.inter_op_threads = inter_op_threads
    self._validate_task()
    if from_environment and self.allowed_roles and self.task.cluster:
      # TensorFlow reads the cluster from TF_CONFIG: publish the one validated here, which
      # may come from SLURM, and names a legacy 'master' 'chief'.
      os.environ["TF_CONFIG"] = self.task.tf_config()
    self.cpus = placement.apply(cpu_affinity, self.task)

  # -- the task -------------------------------------------------------------------------
  def _task_from_environment(self):
    return cluster_lib.from_environment()

  def _validate_task(self):
    task, cluster = self.task, self.task.cluster
    if not self.allowed_roles:
      refuse_cluster(self.name, task)
      return
    if task.source == "horovod":
      raise cluster_lib.ClusterConfigError(
          f"this process is rank {task.rank} of {task.size} started by horovodrun or mpirun, "
          f"but strategy '{self.name}' takes its cluster from TF_CONFIG. Use "
          f"--strategy=horovod under horovodrun, or start {self.name} with `estimator-dist "
          f"launch --strategy={self.name}`.")
    where = "the cluster derived from SLURM" if task.source == "SLURM" else "TF_CONFIG's cluster"
    if not cluster:
      if self.needs_ps:
        raise cluster_lib.ClusterConfigError(
            f"strategy '{self.name}' needs ps tasks, but TF_CONFIG has no cluster. Start it with "
            f"`python -m estimator_dist.launch --strategy={self.name} --num_workers=2 --num_ps=1 "
            f"-- python train.py`, or set TF_CONFIG with 'chief', 'worker' and 'ps' tasks.")
      return
    for role in cluster:
      if role not in self.allowed_roles:
        raise cluster_lib.ClusterConfigError(
            f"{where} has '{role}' tasks, which strategy '{self.name}' does not use "
            f"(it takes {', '.join(self.allowed_roles)}). Remove them from "
            f"TF_CONFIG or pick a strategy that uses them.")
    if "chief" not in cluster:
      workers = list(cluster["worker"])
      fix = {"chief": workers[:1], **({"worker": workers[1:]} if workers[1:] else {}),
             **{r: list(a) for r, a in cluster.items() if r != "worker"}}
      raise cluster_lib.ClusterConfigError(
          f"{where} has no 'chief' task (it has {sorted(cluster)}), and strategy "
          f"'{self.name}' trains through Estimator, which needs one. Make the first worker "
          f"the chief and number the other workers from 0: \"cluster\": "
          f"{json.dumps(fix)}.")
    if self.needs_ps and not cluster.get("ps"):
      raise cluster_lib.ClusterConfigError(
          f"strategy '{self.name}' needs at least one 'ps' task, but {where} has "
          f"{sorted(cluster)}. Add \"ps\": [\"host:port\"] to the cluster (launcher: --num_ps=1).")

  @property
  def num_replicas(self) -> int:
    """Replicas whose gradients make up one update (the learning-rate scaling factor)."""
    return 1

  @property
  def default_lr_scaling(self) -> str:
    return "linear" if self.synchronous else "none"

  def describe(self) -> str:
    return f"{self.name} strategy, {self.task.describe()}, {self.num_replicas} replica(s)"

  # -- Estimator pieces -----------------------------------------------------------------
  def session_config(self):
    return tf.compat.v1.ConfigProto(
        allow_soft_placement=True,
        intra_op_parallelism_threads=self.intra_op_threads,
        inter_op_parallelism_threads=self.inter_op_threads)

  def distribute_strategy(self):
    return None

  def run_config(self, model_dir, **kwargs) -> tf.estimator.RunConfig:
    kwargs.setdefault("session_config", self.session_config())
    strategy = self.distribute_strategy()
    if strategy is not None:
      kwargs["train_distribute"] = strategy
    if self.allowed_roles:
      return tf.estimator.RunConfig(model_dir=model_dir, **kwargs)
    with without_tf_config():  # A one-task cluster (one Kubernetes pod) is one process.
      return tf.estimator.RunConfig(model_dir=model_dir, **kwargs)

  def wrap_model_fn(self, model_fn):
    """The model_fn Estimator calls: decorated if it was not, with this adapter active."""
    from estimator_dist import decorator  # decorator imports this module.
    fn = model_fn if decorator.is_distributed(model_fn) else decorator.distributed(model_fn)

    def model_fn_for_estimator(features, labels, mode, params, config):
      with _active(self):
        return fn(features, labels, mode, params, config)
    return model_fn_for_estimator

  def wrap_input_fn(self, input_fn):
    """The input_fn Estimator calls: this worker's shard, repeated for training."""
    return inputs.wrap_input_fn(input_fn, self.input_context)

  def input_context(self, estimator_context):
    """The tf.distribute.InputContext of this worker (None: one input pipeline)."""
    return estimator_context

  # -- while the model_fn builds its training graph ---------------------------------------
  def gradient_context(self):
    """Entered while the user's model_fn builds its TRAIN graph."""
    return contextlib.nullcontext()

  def check_train_spec(self, spec):
    """Raises if the TRAIN EstimatorSpec cannot train correctly under this strategy."""

  def training_hooks(self):
    return []

  # -- running ----------------------------------------------------------------------------
  def train(self, estimator, train_spec, eval_spec):
    """Runs this task's share of training. Returns eval metrics if it evaluated the end."""
    if eval_spec is None and not self.task.cluster:
      estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                      hooks=train_spec.hooks, saving_listeners=train_spec.saving_listeners)
      return None
    if eval_spec is None:
      # A TF_CONFIG cluster trains only through train_and_evaluate; without an evaluator
      # task its eval spec is never used.
      if self.task.num_tasks("evaluator"):
        raise errors.ConfigError(
            "TF_CONFIG has an evaluator task but no eval_input_fn was given. Pass "
            "eval_input_fn to train_and_evaluate, or drop the evaluator (launcher: no "
            "--evaluator).")
      eval_spec = tf.estimator.EvalSpec(train_spec.input_fn)
    result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    return result[0] if result else None

  def after_training(self):
    """Called on every task when its training ends, before the chief's final evaluation."""


class LocalAdapter(StrategyAdapter):
  """One process, no distribution: the reference the others are measured against."""


def local_adapter():
  """The adapter of one process on its own, whatever TF_CONFIG says."""
  return LocalAdapter(task=cluster_lib.LOCAL_TASK)
