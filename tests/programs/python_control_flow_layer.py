"""A Keras layer whose call() branches in Python on a tensor, as a user writes one: it
builds only where AutoGraph converts the layer's call, as Keras does under a plain
Estimator. Trained through estimator_dist, which must build the model_fn the same way."""

import tensorflow as tf
import estimator_dist as ed

class Gate(tf.keras.layers.Layer):
  def call(self, x):
    if tf.reduce_sum(x) > 0:   # Python control flow on a tensor: needs AutoGraph's conversion.
      return x
    return -x

def model_fn(features, labels, mode, params):
  y = tf.compat.v1.layers.dense(Gate()(features["x"]), 1)
  loss = tf.reduce_mean(tf.square(y - labels))
  opt = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss, tf.compat.v1.train.get_global_step()))

def input_fn():
  return tf.data.Dataset.from_tensors(({"x": [[1.0, 2.0]]}, [[1.0]])).repeat()

def main(_):
  ed.train_and_evaluate(model_fn, input_fn, input_fn, options=ed.options_from_flags(), params={"learning_rate": 0.01})

if __name__ == "__main__":
  ed.define_flags(train_steps=5)
  ed.run_program(main)
