"""A canned DNNClassifier with feature columns, as production code builds it, trained
through estimator_dist unchanged. Its legacy Keras optimizer carries its own learning
rate, which the toolkit finds and scales."""

import tensorflow as tf

import estimator_dist as ed
from model_zoo import data


def main(_):
  options = ed.options_from_flags()
  (x, y), (x_eval, y_eval) = data.load()
  x, x_eval = x.reshape(len(x), -1), x_eval.reshape(len(x_eval), -1)
  estimator = tf.estimator.DNNClassifier(
      hidden_units=[64], n_classes=10,
      feature_columns=[tf.feature_column.numeric_column("pixels", shape=[64])],
      optimizer=lambda: tf.keras.optimizers.legacy.Adagrad(0.1))

  def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"pixels": x}, y)).shuffle(len(y)).batch(
        options.batch_size)

  def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"pixels": x_eval}, y_eval)).batch(100)
  ed.train_and_evaluate(estimator, train_input_fn, eval_input_fn, options=options)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, train_steps=300)
  ed.run_program(main)
