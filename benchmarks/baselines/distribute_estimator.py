"""Hand-written tf.distribute Estimator training: RunConfig(train_distribute=...).

Every task runs this same program with the TF_CONFIG of its place in the cluster, as
TensorFlow's Estimator guides describe. A ps task serves variables until killed.

  TF_CONFIG=... python -m benchmarks.baselines.distribute_estimator \\
      --strategy=multi_worker --model_dir=/tmp/m
"""

import tensorflow as tf
from absl import app
from absl import flags

from benchmarks.baselines import common


def _strategy(name):
  if name == "multi_worker":
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "parameter_server":
    return tf.compat.v1.distribute.experimental.ParameterServerStrategy()
  count = flags.FLAGS.num_devices
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * count)
  return tf.distribute.MirroredStrategy(devices=[f"/cpu:{i}" for i in range(count)])


def main(_):
  f = flags.FLAGS
  strategy = _strategy(f.strategy)
  session_config = common.session_config()
  if f.strategy == "mirrored":
    session_config.device_count["CPU"] = f.num_devices
  synchronous = f.strategy != "parameter_server"
  config = tf.estimator.RunConfig(model_dir=f.model_dir, train_distribute=strategy,
                                  session_config=session_config, tf_random_seed=0)
  model_fn = common.model_fn(strategy.num_replicas_in_sync if synchronous else 1)
  estimator = tf.estimator.Estimator(model_fn, config=config, params=common.params())

  def input_fn(input_context=None):
    if input_context is None:
      return common.input_fn(1, 0)()
    return common.input_fn(input_context.num_input_pipelines,
                           input_context.input_pipeline_id)()
  # A global step's examples: every replica's batch when they step together, one worker's
  # when each steps on its own.
  examples_per_step = f.batch_size * (strategy.num_replicas_in_sync if synchronous else 1)
  train_spec = tf.estimator.TrainSpec(input_fn, max_steps=f.train_steps,
                                      hooks=common.beat_hooks(examples_per_step))
  tf.estimator.train_and_evaluate(estimator, train_spec, tf.estimator.EvalSpec(input_fn))


if __name__ == "__main__":
  common.define_flags()
  app.run(main)
