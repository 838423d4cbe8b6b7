"""The 2-layer CNN of Horovod's MNIST examples, as an Estimator model_fn and a program.

  python -m model_zoo.mnist_cnn --model_dir=/tmp/cnn [--strategy=...] [--data_path=mnist.npz]
"""

import tensorflow as tf

import estimator_dist as ed
from model_zoo import data
from model_zoo import heads


def logits(features, mode, params):
  """conv 5x5x32, pool, conv 5x5x64, pool, dense 1024 with dropout, 10 logits."""
  layers = tf.compat.v1.layers
  images = tf.reshape(features, [-1, 28, 28, 1])
  net = layers.conv2d(images, 32, [5, 5], padding="same", activation=tf.nn.relu)
  net = layers.max_pooling2d(net, [2, 2], 2)
  net = layers.conv2d(net, 64, [5, 5], padding="same", activation=tf.nn.relu)
  net = layers.max_pooling2d(net, [2, 2], 2)
  net = tf.reshape(net, [-1, 7 * 7 * 64])
  net = layers.dense(net, 1024, activation=tf.nn.relu)
  net = layers.dropout(net, rate=params.get("dropout_rate", 0.4),
                       training=mode == tf.estimator.ModeKeys.TRAIN)
  return layers.dense(net, 10)


model_fn = heads.classifier_model_fn(logits)


# Dropout draws masks per batch, so it cannot match across different batch splits.
VERIFY_PARAMS = {"dropout_rate": 0.0}


input_fn = data.digits_input_fn(image_size=28)


def main(_):
  data.train_from_flags(model_fn, image_size=28)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, learning_rate=0.01, train_steps=300)
  data.define_flags()
  ed.run_program(main)
