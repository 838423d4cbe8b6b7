"""TensorFlow's multi-worker Estimator tutorial, as a program: its own
MultiWorkerMirroredStrategy in RunConfig(train_distribute=...), an input_fn that shards
itself by `input_context`, and a TrainSpec without max_steps (one pass over the data).

Upstream: tensorflow/docs, site/en/tutorials/distribute/multi_worker_with_estimator.ipynb
at commit 60c51e7a4b34ff7e02b339b361a5bff7f091cbf8: its code cells in order, as one file.

Edits (this machine downloads nothing):
- `tfds.load(name='mnist', ...)` is `load_mnist()` below: the digits scikit-learn ships
  (8x8, 0..16), scaled to 0..255 and centred in 28x28x1 uint8 images, int64 labels, every
  fifth one a test image, as the (image, label) pairs tfds gives (`as_supervised=True`).
"""

import numpy as np
from sklearn.datasets import load_digits

import tensorflow as tf

import os, json


def load_mnist():
  digits = load_digits()
  images = np.zeros((len(digits.images), 28, 28, 1), np.uint8)
  images[:, 10:18, 10:18, 0] = (digits.images * 255 / 16).astype(np.uint8)
  labels = digits.target.astype(np.int64)
  test = np.arange(len(labels)) % 5 == 0
  return {'train': tf.data.Dataset.from_tensor_slices((images[~test], labels[~test])),
          'test': tf.data.Dataset.from_tensor_slices((images[test], labels[test]))}, None


tf.compat.v1.disable_eager_execution()

BUFFER_SIZE = 10000
BATCH_SIZE = 64

def input_fn(mode, input_context=None):
  datasets, info = load_mnist()
  mnist_dataset = (datasets['train'] if mode == tf.estimator.ModeKeys.TRAIN else
                   datasets['test'])

  def scale(image, label):
    image = tf.cast(image, tf.float32)
    image /= 255
    return image, label

  if input_context:
    mnist_dataset = mnist_dataset.shard(input_context.num_input_pipelines,
                                        input_context.input_pipeline_id)
  return mnist_dataset.map(scale).cache().shuffle(BUFFER_SIZE).batch(BATCH_SIZE)

LEARNING_RATE = 1e-4
def model_fn(features, labels, mode):
  model = tf.keras.Sequential([
      tf.keras.layers.Conv2D(32, 3, activation='relu', input_shape=(28, 28, 1)),
      tf.keras.layers.MaxPooling2D(),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(64, activation='relu'),
      tf.keras.layers.Dense(10)
  ])
  logits = model(features, training=False)

  if mode == tf.estimator.ModeKeys.PREDICT:
    predictions = {'logits': logits}
    return tf.estimator.EstimatorSpec(labels=labels, predictions=predictions)

  optimizer = tf.compat.v1.train.GradientDescentOptimizer(
      learning_rate=LEARNING_RATE)
  loss = tf.keras.losses.SparseCategoricalCrossentropy(
      from_logits=True, reduction=tf.keras.losses.Reduction.NONE)(labels, logits)
  loss = tf.reduce_sum(loss) * (1. / BATCH_SIZE)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss)

  return tf.estimator.EstimatorSpec(
      mode=mode,
      loss=loss,
      train_op=optimizer.minimize(
          loss, tf.compat.v1.train.get_or_create_global_step()))

strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()

config = tf.estimator.RunConfig(train_distribute=strategy)

classifier = tf.estimator.Estimator(
    model_fn=model_fn, model_dir='/tmp/multiworker', config=config)
tf.estimator.train_and_evaluate(
    classifier,
    train_spec=tf.estimator.TrainSpec(input_fn=input_fn),
    eval_spec=tf.estimator.EvalSpec(input_fn=input_fn)
)
