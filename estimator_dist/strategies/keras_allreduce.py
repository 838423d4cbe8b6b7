"""Horovod all-reduce for the legacy Keras optimizers that canned Estimators build.

A tf.keras.optimizers.legacy optimizer sums its gradients across a tf.distribute
strategy's replicas in `_aggregate_gradients`, which `apply_gradients` calls (also
through `minimize` and `get_updates`, as canned heads do). Under Horovod there is no such
strategy; while the TRAIN graph is built, that method is replaced by one that
all-reduces each gradient across the ranks instead.
"""

import tensorflow as tf

from estimator_dist import errors


def optimizer_class():
  return tf.keras.optimizers.legacy.Optimizer


def aggregate_with(allreduce, *, on_call, options):
  """The `_aggregate_gradients` that all-reduces with `allreduce(tensor)`.

  `on_call()` is called once per apply. Micro-batch accumulation is for v1 optimizers
  only: with it, a Keras optimizer is refused.
  """
  if options.backward_passes_per_step != 1 or options.global_batch_size is not None:
    def refuse(optimizer, grads_and_vars):
      raise errors.ConfigError(
          f"backward_passes_per_step and global_batch_size accumulate gradients of "
          f"tf.compat.v1.train optimizers; the model_fn applies the Keras optimizer "
          f"{type(optimizer).__name__}. Drop those options, or build the train_op with a "
          f"tf.compat.v1.train optimizer.")
    return refuse

  def aggregate(optimizer, grads_and_vars):
    del optimizer
    on_call()
    return [(None if grad is None else allreduce(grad), var) for grad, var in grads_and_vars]
  return aggregate
