"""`multi_worker`: MultiWorkerMirroredStrategy (CollectiveAllReduce) from TF_CONFIG."""

import tensorflow as tf

from estimator_dist import errors
from estimator_dist.strategies import base

COMMUNICATIONS = {
    "auto": tf.distribute.experimental.CommunicationImplementation.AUTO,
    "ring": tf.distribute.experimental.CommunicationImplementation.RING,
    "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
}


class MultiWorkerAdapter(base.StrategyAdapter):
  """Synchronous all-reduce across worker processes; worker 0 (or the chief) leads."""
  name = "multi_worker"
  allowed_roles = ("chief", "worker", "evaluator")

  def __init__(self, task=None, communication="auto", collective_timeout_secs=None, **options):
    super().__init__(task, **options)
    errors.check_choice("communication", communication, tuple(COMMUNICATIONS))
    if collective_timeout_secs is not None and collective_timeout_secs <= 0:
      raise errors.ConfigError(
          f"collective_timeout_secs ({collective_timeout_secs}) must be positive.")
    self.communication = communication
    self.collective_timeout_secs = collective_timeout_secs
    self._strategy = None
    if self.task.role != "evaluator":
      # Must come before any other TensorFlow op: it starts this task's gRPC server.
      self._strategy = tf.distribute.MultiWorkerMirroredStrategy(
          communication_options=tf.distribute.experimental.CommunicationOptions(
              implementation=COMMUNICATIONS[communication],
              timeout_seconds=collective_timeout_secs))

  @property
  def num_replicas(self):
    if self._strategy is None:
      return max(self.task.size, 1)
    return self._strategy.num_replicas_in_sync

  def distribute_strategy(self):
    return self._strategy
