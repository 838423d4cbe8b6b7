"""A fully connected classifier on flat features, as an Estimator model_fn and a program.

  python -m model_zoo.mnist_dnn --model_dir=/tmp/dnn [--strategy=...]
"""

import tensorflow as tf
from absl import flags

import estimator_dist as ed
from model_zoo import data
from model_zoo import heads

flags.DEFINE_list("hidden_units", ["256", "128"], "Units of each hidden layer.")


def logits(features, mode, params):
  """Hidden layers of params["hidden_units"] (default 256, 128), then 10 logits."""
  del mode  # No layer behaves differently in training.
  net = tf.compat.v1.layers.flatten(features)
  for units in params.get("hidden_units", (256, 128)):
    net = tf.compat.v1.layers.dense(net, int(units), activation=tf.nn.relu)
  return tf.compat.v1.layers.dense(net, 10)


model_fn = heads.classifier_model_fn(logits)


input_fn = data.digits_input_fn()


def main(_):
  data.train_from_flags(model_fn, hidden_units=[int(u) for u in flags.FLAGS.hidden_units])


if __name__ == "__main__":
  ed.define_flags(batch_size=32, learning_rate=0.05, train_steps=500)
  data.define_flags()
  ed.run_program(main)
