"""Sparse gradients all-reduced dense under the collective strategies: multi_worker, and
mirrored, whose replicas all-reduce with collectives too.

A sparse gradient (an embedding's, a categorical column's: IndexedSlices) is all-reduced
dense in an Estimator's graph. TensorFlow gathers IndexedSlices with a `cond` on whether
every replica's slices have one length; in a TF1 graph the replicas' gathers of different
lengths meet in the wrong branch and the step fails ("Shape mismatch in the collective
instance", tensorflow#33339): Cloud ML's census trainer failed so at its first step under
both strategies (measured, TensorFlow 2.15); a column whose batches all have one length
did not. Summed dense, the result is the same, at the cost of sending the whole variable,
as TensorFlow's own reductions to one device do with IndexedSlices.
"""

import functools

import tensorflow as tf
from absl import logging
from tensorflow.python.distribute import cross_device_utils  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import command_line


def all_reduced_dense():
  """Makes CollectiveAllReduce all-reduce an IndexedSlices dense in a TF1 graph (see the
  module's docstring); once per process. Under tf.function TensorFlow orders its
  collectives, and its own gather of IndexedSlices is kept."""
  launcher = cross_device_utils.CollectiveReplicaLauncher
  original = launcher.all_reduce_indexed_slices
  if getattr(original, "estimator_dist_dense", False):
    return

  @functools.wraps(original)
  def all_reduce_indexed_slices(self, input_slices, options=None):
    if tf.compat.v1.executing_eagerly_outside_functions():
      return original(self, input_slices, options)
    logging.log_first_n(logging.INFO, command_line.line(
        "the job all-reduces the Estimator's sparse gradients (embeddings, categorical "
        "columns) dense: TensorFlow's gather of sparse gradients fails in a TF1 graph when "
        "the replicas' lengths differ"), 1)
    reduced, = self.batch_all_reduce([[tf.convert_to_tensor(input_slices)]], options)
    rows = tf.shape(reduced, out_type=tf.int64)
    return tf.IndexedSlices(values=reduced, indices=tf.range(rows[0]), dense_shape=rows)
  all_reduce_indexed_slices.estimator_dist_dense = True
  launcher.all_reduce_indexed_slices = all_reduce_indexed_slices
