"""`horovod`: one process per replica, gradients all-reduced by Horovod (Gloo or MPI).

The user's model_fn builds any tf.compat.v1.train.Optimizer and calls `minimize` (or
`compute_gradients` and `apply_gradients`). While the TRAIN graph is built, those two
methods of the Optimizer base class are routed through a Horovod DistributedOptimizer
made for that optimizer, so its gradients are all-reduced with the options chosen here.
Rank 0 restores, broadcasts, checkpoints, writes summaries and logs; the other ranks
read the same model_dir (so all agree where training stands) and write nothing.
"""

import contextlib
import os
import threading

import tensorflow as tf
from absl import logging

from estimator_dist import errors
from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.strategies import accumulation
from estimator_dist.strategies import base
from estimator_dist.strategies import checks
from estimator_dist.strategies import elastic
from estimator_dist.strategies import horovod_options
from estimator_dist.strategies import keras_allreduce
from estimator_dist.task import rank_address

_Optimizer = tf.compat.v1.train.Optimizer
_ORIGINAL = {"compute_gradients": _Optimizer.compute_gradients,
             "apply_gradients": _Optimizer.apply_gradients}
_inside = threading.local()


def _import_horovod():
  try:
    import horovod.tensorflow as hvd  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(
        f"strategy 'horovod' needs Horovod 0.28.1 built for this TensorFlow ({e}). Run "
        f"`make setup` (it builds Horovod with Gloo), or pick another strategy.") from None
  return hvd


class HorovodAdapter(base.StrategyAdapter):
  """Synchronous data parallelism with Horovod's all-reduce."""
  name = "horovod"
  Options = horovod_options.HorovodOptions
  # Every rank holds the same weights: rank 0 alone saves and logs them.
  chief_only_fields = ("save_checkpoints_steps", "save_checkpoints_secs", "save_summary_steps",
                       "log_step_count_steps")
  passes = None  # With global_batch_size: micro-batches this rank accumulates per update.

  hvd = None  # horovod.tensorflow, once this adapter has initialised it.

  def _init_horovod(self):
    """hvd.init() after the CPU defaults; once per adapter (an elastic round makes anew)."""
    if self.hvd is not None:
      return
    rank_address.bind()  # May start this program again, bound to the job's network.
    hvd = _import_horovod()
    horovod_options.set_environment(self.options,
                                    on_cpus=not tf.config.list_physical_devices("GPU"))
    hvd.init()
    self.hvd = hvd

  def task_from_environment(self):
    checks.refuse_cluster(self.name, cluster_lib.parse_tf_config(os.environ.get("TF_CONFIG")))
    self._init_horovod()
    hvd = self.hvd
    return cluster_lib.horovod_task(hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size())

  def start_backend(self):
    self._init_horovod()
    self._allreduced = 0
    # Horovod's own wrappers are left alone: they already all-reduce.
    self._hvd_optimizers = (self.hvd._DistributedOptimizer,  # pylint: disable=protected-access
                            self.hvd._DistributedAdasumOptimizer)  # pylint: disable=protected-access
    options = self.options
    if options.global_batch_size is not None:
      self.passes = accumulation.micro_batches_per_rank(
          options.global_batch_size, options.batch_size, self.task.size)[self.task.rank]
    if not self.task.is_chief:
      logging.set_verbosity(logging.WARNING)
      tf.get_logger().setLevel("WARNING")

  def renewed(self):
    """The same adapter for Horovod's current ranks (after an elastic reset)."""
    return type(self)(options=self.options).start()

  def run_training(self, train_with, *, model_dir):
    if not elastic.enabled():
      return super().run_training(train_with, model_dir=model_dir)
    return elastic.run(self, train_with, model_dir)

  @property
  def num_replicas(self):
    if self.options.global_batch_size:  # The learning rate follows the global batch.
      return self.options.global_batch_size // self.options.batch_size
    return self.task.size

  @property
  def runs_per_update(self):
    return self.passes or self.options.backward_passes_per_step

  @property
  def preempted_exit_code(self):
    # horovodrun (MPI and Gloo) ends every rank once one exits with a code other than 0:
    # the chief, the last to exit (task/preemption_save.py), alone says it was preempted.
    return super().preempted_exit_code if self.task.is_chief else 0

  def describe(self):
    text = super().describe()
    if self.passes:
      text += (f", global batch {self.options.global_batch_size}: {self.passes} "
               f"micro-batch(es) of {self.options.batch_size} on this rank per update")
    return text

  def session_config(self):
    config = super().session_config()
    if tf.config.list_physical_devices("GPU"):
      config.gpu_options.visible_device_list = str(self.task.local_rank)
      config.gpu_options.allow_growth = True
    return config

  def run_config(self, model_dir, **kwargs):
    if not self.task.is_chief:
      kwargs.update(dict.fromkeys(self.chief_only_fields))
    return super().run_config(model_dir, **kwargs)

  def input_context(self, estimator_context):
    return tf.distribute.InputContext(num_input_pipelines=self.task.size,
                                      input_pipeline_id=self.task.rank,
                                      num_replicas_in_sync=self.task.size)

  # -- gradients ------------------------------------------------------------------------
  def _distributed_optimizer(self, optimizer):
    """The Horovod DistributedOptimizer of `optimizer`, made once."""
    wrapped = optimizer.__dict__.get("_estimator_dist_horovod")
    if wrapped is None:
      hvd = self.hvd
      options = self.options
      compression = self._compression()
      if self.passes:  # A fixed global batch: accumulate, then all-reduce the sums.
        wrapped = accumulation.Accumulator(
            optimizer, _ORIGINAL,
            lambda t: hvd.allreduce(t, op=hvd.Sum, compression=compression),
            self.passes, options.global_batch_size // options.batch_size)
      else:
        wrapped = hvd.DistributedOptimizer(
            optimizer, compression=compression,
            op=self._reduction(),
            backward_passes_per_step=options.backward_passes_per_step,
            gradient_predivide_factor=options.gradient_predivide_factor)
      optimizer.__dict__["_estimator_dist_horovod"] = wrapped
    return wrapped

  def _routed(self, method):
    """Optimizer.<method> routed through this optimizer's Horovod wrapper."""
    original = _ORIGINAL[method]

    def routed(optimizer, *args, **kwargs):
      if getattr(_inside, "active", False):
        return original(optimizer, *args, **kwargs)
      with self._inside_horovod(method):
        return getattr(self._distributed_optimizer(optimizer), method)(*args, **kwargs)
    return routed

  def _guarded(self, method, original):
    """A Horovod wrapper's own <method>: it all-reduces already, so nothing is routed inside,
    and the rate of the optimizer it wraps is the program's, scaled already (Horovod's
    examples multiply it by hvd.size())."""
    def guarded(optimizer, *args, **kwargs):
      if getattr(_inside, "active", False):  # The wrapper made here (routed), or inside one.
        return original(optimizer, *args, **kwargs)
      inner = getattr(optimizer, "_optimizer", None)
      if inner is not None:  # The program's own wrapper.
        inner.__dict__[base.RATE_SCALED_BY_PROGRAM] = True
      with self._inside_horovod(method):
        return original(optimizer, *args, **kwargs)
    return guarded

  def _count(self):
    self._allreduced += 1

  def _allreduce(self, tensor):
    """`tensor` all-reduced across the ranks with the chosen op and compression."""
    hvd, options = self.hvd, self.options
    op, scales = self._reduction(), {}
    factor = options.gradient_predivide_factor
    if factor != 1.0:  # As Horovod's DistributedOptimizer: divide, sum, average the rest.
      op, scales = hvd.Sum, {"prescale_factor": 1.0 / factor,
                             "postscale_factor": factor / self.task.size}
    return hvd.allreduce(tensor, op=op, compression=self._compression(), **scales)

  def _reduction(self):
    return {"average": self.hvd.Average, "sum": self.hvd.Sum,
            "adasum": self.hvd.Adasum}[self.options.reduction]

  def _compression(self):
    return (self.hvd.Compression.fp16 if self.options.compression == "fp16" else
            self.hvd.Compression.none)

  @contextlib.contextmanager
  def _inside_horovod(self, method):
    _inside.active = True
    if method == "compute_gradients":
      self._count()
    try:
      yield
    finally:
      _inside.active = False

  @contextlib.contextmanager
  def gradient_context(self):
    self._allreduced = 0
    if self.task.size == 1 and not self.passes:  # One rank has nothing to all-reduce.
      yield
      return
    patches = [(_Optimizer, m, self._routed(m)) for m in _ORIGINAL]
    patches += [(cls, m, self._guarded(m, cls.__dict__[m]))
                for cls in self._hvd_optimizers for m in _ORIGINAL]
    patches.append((keras_allreduce.optimizer_class(), "_aggregate_gradients",
                    keras_allreduce.aggregate_with(self._allreduce, on_call=self._count,
                                                   options=self.options)))
    saved = [(cls, m, cls.__dict__[m]) for cls, m, _ in patches]
    for cls, method, patched in patches:
      setattr(cls, method, patched)
    try:
      yield
    finally:
      for cls, method, original in saved:
        setattr(cls, method, original)

  def check_train_spec(self, spec):
    if self.task.size > 1 and not self._allreduced:
      raise errors.ConfigError(
          "under strategy 'horovod' the model_fn built its train_op without a "
          "tf.compat.v1.train or tf.keras.optimizers.legacy optimizer, so no gradient "
          "would be all-reduced and the ranks would drift apart. Build the train_op with "
          "such an optimizer's minimize() or compute_gradients()/apply_gradients().")

  def training_hooks(self):
    return [self.hvd.BroadcastGlobalVariablesHook(0)] if self.task.size > 1 else []

  # -- running ----------------------------------------------------------------------------
  def stop_requested(self, requested):
    return self.hvd.allreduce(tf.cast(requested, tf.float32), op=self.hvd.Sum,
                              name="estimator_dist_stop_requested")

  def train(self, estimator, train_spec, eval_spec):
    # tf.estimator.train_and_evaluate would evaluate on rank 0 in the middle of training
    # and restart sessions unevenly across ranks; every rank trains, the chief evaluates
    # once training has ended on all ranks.
    # Only rank 0 writes checkpoints, so only it has checkpoint listeners.
    estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps, hooks=train_spec.hooks,
                    saving_listeners=train_spec.saving_listeners if self.task.is_chief else None)
    return None

