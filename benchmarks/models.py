"""The models the benchmark trains, and their data (`choices` names them)."""

import collections

import numpy as np
import tensorflow as tf

from benchmarks import choices
from model_zoo import data
from model_zoo import mnist_cnn
from model_zoo import mnist_dnn
from model_zoo import resnet

Model = collections.namedtuple("Model", "module image_size learning_rate")

# By choices.MODELS' names, in their order.
MODELS = {
    "mnist_cnn": Model(mnist_cnn, 28, 0.01),
    "mnist_dnn": Model(mnist_dnn, None, 0.05),
    "resnet20": Model(resnet, resnet.IMAGE_SIZE, 0.05),
}
DATA = choices.DATA
SYNTHETIC_EXAMPLES = 4096


def load(model, data_name):
  """((x_train, y_train), (x_eval, y_eval)) for `model` (a MODELS key)."""
  return data.load(synthetic=data_name == "synthetic", synthetic_examples=SYNTHETIC_EXAMPLES,
                   image_size=MODELS[model].image_size)


def parameter_bytes(model):
  """Bytes of the model's trainable variables (float32), from a throwaway graph."""
  (x, _), _ = load(model, "synthetic")
  with tf.Graph().as_default():
    features = tf.compat.v1.placeholder(tf.float32, (None,) + x.shape[1:])
    MODELS[model].module.logits(features, tf.estimator.ModeKeys.TRAIN, {})
    return 4 * int(sum(np.prod(v.shape) for v in tf.compat.v1.trainable_variables()))
