"""A canned DNNClassifier with feature columns, as production code builds it, trained
through estimator_dist unchanged. Its legacy Keras optimizer carries its own learning
rate, which the toolkit finds and scales. Also an `estimator-dist verify` module."""

import tensorflow as tf
from absl import flags

import estimator_dist as ed
from model_zoo import data

flags.DEFINE_float("stop_if_loss_above", None, "Stop with TensorFlow's stop_if_higher_hook "
                   "once the eval loss is above this.")
FLAGS = flags.FLAGS


def estimator(model_dir=None):
  return tf.estimator.DNNClassifier(
      model_dir=model_dir,
      hidden_units=[64], n_classes=10,
      feature_columns=[tf.feature_column.numeric_column("pixels", shape=[64])],
      optimizer=lambda: tf.keras.optimizers.legacy.Adagrad(0.1))


(_X, _Y), (_X_EVAL, _Y_EVAL) = data.load()
input_fn = data.input_fn(_X.reshape(-1, 64), _Y, shuffle=True, key="pixels")
eval_input_fn = data.input_fn(_X_EVAL.reshape(-1, 64), _Y_EVAL, shuffle=False, key="pixels")


def main(_):
  options = ed.options_from_flags()
  classifier = estimator(options.model_dir)
  hooks = []
  if FLAGS.stop_if_loss_above is not None:
    hooks.append(tf.estimator.experimental.stop_if_higher_hook(
        classifier, "loss", FLAGS.stop_if_loss_above, run_every_secs=1))
  ed.train_and_evaluate(classifier, input_fn, eval_input_fn, hooks=hooks,
                        params={"batch_size": options.batch_size}, options=options)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, train_steps=300)
  ed.run_program(main)
