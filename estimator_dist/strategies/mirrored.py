"""`mirrored`: tf.distribute.MirroredStrategy over the devices of one machine."""

import os

import tensorflow as tf

from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.strategies import base
from estimator_dist.strategies import options as options_lib
from estimator_dist.strategies import sparse_gradients


def _cpu_devices(count):
  cpu = tf.config.list_physical_devices("CPU")[0]
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * count)
  except RuntimeError as e:
    raise RuntimeError(
        f"mirrored: cannot split the CPU into {count} replicas because TensorFlow is already "
        f"initialized ({e}). Create the strategy (estimator_dist.create_strategy or "
        f"train_and_evaluate) before running any TensorFlow op.") from None
  return [f"/cpu:{i}" for i in range(count)]




class MirroredAdapter(base.StrategyAdapter):
  """Synchronous replicas on the local GPUs, or on logical CPU devices without GPUs."""
  name = "mirrored"
  Options = options_lib.MirroredOptions

  def start_backend(self):
    num_devices = self.options.num_devices
    if num_devices is None:
      num_devices = int(os.environ.get(env_vars.NUM_DEVICES, "0")) or None
      errors.check_positive(env_vars.NUM_DEVICES, num_devices, allow_none=True)
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
      if num_devices and num_devices > len(gpus):
        raise errors.ConfigError(
            f"num_devices ({num_devices}) is more than the {len(gpus)} GPUs here.")
      devices = [f"/gpu:{i}" for i in range(num_devices or len(gpus))]
    else:
      devices = _cpu_devices(num_devices or 1)
    self.devices = devices
    sparse_gradients.all_reduced_dense()
    self._strategy = tf.distribute.MirroredStrategy(devices=devices)

  @property
  def num_replicas(self):
    return self._strategy.num_replicas_in_sync

  def distribute_strategy(self):
    return self._strategy

  def session_config(self):
    config = super().session_config()
    config.device_count["CPU"] = sum(d.startswith("/cpu") for d in self.devices) or 1
    return config
