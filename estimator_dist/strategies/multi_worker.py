"""`multi_worker`: MultiWorkerMirroredStrategy (CollectiveAllReduce) from TF_CONFIG."""

import tensorflow as tf
from absl import logging

from estimator_dist import command_line
from estimator_dist.strategies import base
from estimator_dist.strategies import options as options_lib
from estimator_dist.strategies import sparse_gradients

# Each of options_lib.COMMUNICATIONS as tf.distribute names it.
COMMUNICATIONS = {
    name: getattr(tf.distribute.experimental.CommunicationImplementation, name.upper())
    for name in options_lib.COMMUNICATIONS}


class MultiWorkerAdapter(base.StrategyAdapter):
  """Synchronous all-reduce across worker processes; worker 0 (or the chief) leads."""
  name = "multi_worker"
  Options = options_lib.MultiWorkerOptions
  _strategy = None

  def start_backend(self):
    sparse_gradients.all_reduced_dense()
    if self.task.role != "evaluator":
      # Must come before any other TensorFlow op: it starts this task's gRPC server.
      self._strategy = tf.distribute.MultiWorkerMirroredStrategy(
          communication_options=tf.distribute.experimental.CommunicationOptions(
              implementation=COMMUNICATIONS[self.options.communication],
              timeout_seconds=self.options.collective_timeout_secs))

  @property
  def num_replicas(self):
    if self._strategy is None:
      return max(self.task.size, 1)
    return self._strategy.num_replicas_in_sync

  def distribute_strategy(self):
    return self._strategy

  def warm_start(self, settings):
    # A restore in the graph would replace the chief's broadcast of initial values (the
    # workers would wait for it), and each worker's Keras model has weights of its own.
    if settings:
      logging.warning(
          command_line.line(
              "multi_worker starts from the initial values the chief broadcasts, not from "
              "the Keras model's weights (%s). To start from trained weights, put their "
              "checkpoint in the model_dir, or train under horovod, parameter_server or "
              "mirrored."), settings.ckpt_to_initialize_from)
    return None, []

  def stop_requested(self, requested):
    # A mirrored variable that sums what the workers assign: an all-reduce. Local, so
    # it is neither saved in checkpoints nor expected in them.
    with tf.compat.v1.variable_scope("estimator_dist", reuse=tf.compat.v1.AUTO_REUSE):
      requests = tf.compat.v1.get_variable(
          "stop_requests", shape=(), dtype=tf.int32, initializer=tf.zeros_initializer(),
          collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES], trainable=False,
          synchronization=tf.VariableSynchronization.ON_WRITE,
          aggregation=tf.VariableAggregation.SUM)

    def assign_and_read(variable):
      with tf.control_dependencies([variable.assign(requested)]):
        return variable.read_value()
    strategy = tf.distribute.get_strategy()  # The Estimator's copy, whose scope this is.
    result = strategy.run(assign_and_read, args=(requests,))
    return strategy.experimental_local_results(result)[0]
