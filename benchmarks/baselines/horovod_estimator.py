"""Hand-written Horovod Estimator training (as Horovod's tensorflow_mnist_estimator.py).

  horovodrun -np 2 -H localhost:2 python -m benchmarks.baselines.horovod_estimator \\
      --model_dir=/tmp/m
"""

import horovod.tensorflow as hvd
import tensorflow as tf
from absl import app
from absl import flags

from benchmarks.baselines import common


def main(_):
  f = flags.FLAGS
  hvd.init()
  config = tf.estimator.RunConfig(model_dir=f.model_dir if hvd.rank() == 0 else None,
                                  session_config=common.session_config(), tf_random_seed=0)
  estimator = tf.estimator.Estimator(common.model_fn(hvd.size(), hvd.DistributedOptimizer),
                                     config=config, params=common.params())
  estimator.train(common.input_fn(hvd.size(), hvd.rank()), max_steps=f.train_steps,
                  hooks=[hvd.BroadcastGlobalVariablesHook(0),
                         *common.beat_hooks(f.batch_size * hvd.size())])


if __name__ == "__main__":
  common.define_flags()
  app.run(main)
