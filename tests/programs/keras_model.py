"""A Keras conv net compiled with a current Keras optimizer and turned into an Estimator
by `model_to_estimator`, as production code does it, trained through estimator_dist
unchanged: the toolkit finds the compiled optimizer's rate and scales it. Also an
`estimator-dist verify` module."""

import tensorflow as tf

import estimator_dist as ed
from model_zoo import data
from tests.programs import plain_model  # Its --step_secs too.



def conv_net():
  model = tf.keras.Sequential([
      tf.keras.layers.Reshape((8, 8, 1), input_shape=(8, 8), name="image"),
      tf.keras.layers.Conv2D(16, 3, activation="relu"),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(10)])
  model.compile(optimizer=tf.keras.optimizers.Adam(0.005),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
  return model


def estimator(model_dir=None):
  return tf.keras.estimator.model_to_estimator(keras_model=conv_net(), model_dir=model_dir)


def serving_input_receiver_fn():
  images = tf.compat.v1.placeholder(tf.float32, [None, 8, 8], name="image_input")
  return tf.estimator.export.build_raw_serving_input_receiver_fn({"image_input": images})()


(_X, _Y), (_X_EVAL, _Y_EVAL) = data.load()
input_fn = data.input_fn(_X, _Y, shuffle=True, key="image_input")
eval_input_fn = data.input_fn(_X_EVAL, _Y_EVAL, shuffle=False, key="image_input")


def main(_):
  options = ed.options_from_flags()
  ed.train_and_evaluate(estimator(), input_fn, eval_input_fn,
                        params={"batch_size": options.batch_size},
                        hooks=plain_model.step_hooks(),
                        serving_input_receiver_fn=serving_input_receiver_fn, options=options)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, train_steps=300)
  ed.run_program(main)
