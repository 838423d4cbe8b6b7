"""A trainer in the shape of TensorFlow's cifar10_estimator and canned-Estimator examples,
which never imports estimator_dist: its hyperparameters are an object, not a dict
(cifar10_estimator's HParams, here an argparse.Namespace), given to the Estimator as its
params and read as attributes by its model_fn; then what train_and_evaluate returns is
unpacked and printed on every task, as the canned examples do
(`eval_result, _ = tf.estimator.train_and_evaluate(...)`, `'{accuracy:0.3f}'.format(**eval_result)`).
Its --model_dir has a default, as most programs' do (census: /tmp/census_model); with
--fresh it trains in `tempfile.mkdtemp(prefix="hparams_")`, as trainers that want a new
directory do. --eval_busy_secs makes its evaluation compute that long (a large eval set).
"""

import argparse
import os
import tempfile
import time

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--model_dir", default=os.path.join(tempfile.gettempdir(), "hparams_model"))
parser.add_argument("--fresh", action="store_true")
parser.add_argument("--eval_busy_secs", type=float, default=0.0)
parser.add_argument("--train_steps", type=int, default=40)
parser.add_argument("--learning_rate", type=float, default=0.1)
hparams = parser.parse_args()

x = np.random.RandomState(0).rand(512, 4).astype(np.float32)
y = (x.sum(axis=1) > 2).astype(np.int32)


def train_input_fn():
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).shuffle(512).repeat().batch(32)


def busy(features):
  end = time.monotonic() + hparams.eval_busy_secs / 4  # 4 batches.
  while time.monotonic() < end:
    pass
  return features


def eval_input_fn():
  dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(128)
  if not hparams.eval_busy_secs:
    return dataset
  return dataset.map(lambda f, label: ({"x": tf.ensure_shape(tf.numpy_function(
      busy, [f["x"]], tf.float32), [None, 4])}, label))


def model_fn(features, labels, mode, params):
  logits = tf.compat.v1.layers.dense(features["x"], 2)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(params.learning_rate)
  train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


estimator = tf.estimator.Estimator(
    model_fn, model_dir=tempfile.mkdtemp(prefix="hparams_") if hparams.fresh else hparams.model_dir,
    params=hparams)
train_spec = tf.estimator.TrainSpec(train_input_fn, max_steps=hparams.train_steps)
eval_spec = tf.estimator.EvalSpec(eval_input_fn, steps=None)
eval_result, _ = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
print("Test set accuracy: {accuracy:0.3f} at step {global_step}".format(**eval_result),
      flush=True)
