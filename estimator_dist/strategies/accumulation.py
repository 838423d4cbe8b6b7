"""A fixed global batch on any number of Horovod ranks: gradient accumulation.

With `global_batch_size=G` and micro-batches of `batch_size=b`, one update averages the
gradients of exactly G examples: G/b micro-batches, spread over the ranks, the first
ranks taking one more when they do not divide evenly (ElasticDL's rule). Each rank sums
the gradients of its micro-batches in local variables; when it has its share, the sums
are all-reduced, divided by G/b and applied once. `global_step` counts applied updates.
The ranks' shares are computed when the graph is built, so after the number of ranks
changes the next graph uses the new count and G stays the same.
"""

import tensorflow as tf

from estimator_dist import errors


def micro_batches_per_rank(global_batch_size, batch_size, size):
  """[k_0, ..., k_(size-1)]: micro-batches each rank accumulates for one update."""
  errors.check_positive("global_batch_size", global_batch_size)
  errors.check_positive("batch_size", batch_size)
  total, rest = divmod(global_batch_size, batch_size)
  if rest:
    raise errors.ConfigError(
        f"global_batch_size ({global_batch_size}) must be a multiple of batch_size "
        f"({batch_size}), the size of one micro-batch.")
  if total < size:
    raise errors.ConfigError(
        f"global_batch_size ({global_batch_size}) is {total} micro-batch(es) of "
        f"{batch_size}, fewer than the {size} ranks; each rank needs at least one. Use a "
        f"global_batch_size of at least {size * batch_size} or a smaller batch_size.")
  share, extra = divmod(total, size)
  return [share + (1 if rank < extra else 0) for rank in range(size)]


class Accumulator:
  """Stands in for an optimizer's compute_gradients and apply_gradients in the graph."""

  def __init__(self, optimizer, original, allreduce_sum, passes, total):
    self._optimizer = optimizer
    self._original = original
    self._allreduce_sum = allreduce_sum
    self._passes = passes
    self._total = total

  def compute_gradients(self, *args, **kwargs):
    """This micro-batch's gradients, local to this rank."""
    return self._original["compute_gradients"](self._optimizer, *args, **kwargs)

  def apply_gradients(self, grads_and_vars, global_step=None, name=None):
    """Adds the gradients to this rank's sums; applies the mean once it has its share."""
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    local = [tf.compat.v1.GraphKeys.LOCAL_VARIABLES]  # Not saved, not broadcast.
    with tf.compat.v1.name_scope("estimator_dist_accumulation"):
      sums = [tf.compat.v1.Variable(tf.zeros(v.shape, v.dtype.base_dtype), trainable=False,
                                    collections=local, name=v.op.name.replace("/", "_"))
              for _, v in pairs]
      count = tf.compat.v1.Variable(0, trainable=False, collections=local, name="count")
      added = [s.assign_add(tf.convert_to_tensor(g)) for s, (g, _) in zip(sums, pairs)]
      with tf.control_dependencies(added):
        counted = count.assign_add(1)

    def apply():
      means = [self._allreduce_sum(s) / self._total for s in sums]
      update = self._original["apply_gradients"](
          self._optimizer, [(m, v) for m, (_, v) in zip(means, pairs)],
          global_step=global_step, name=name)
      with tf.control_dependencies([update]):
        return tf.group([s.assign(tf.zeros_like(s)) for s in sums] + [count.assign(0)])
    return tf.cond(counted >= self._passes, apply, tf.no_op)
