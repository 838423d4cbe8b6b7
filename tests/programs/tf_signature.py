"""A TensorFlow program in TensorFlow's form, `train_and_evaluate(estimator, train_spec,
eval_spec)`, whose one edit is `tf.estimator` -> `ed`: its Estimator's RunConfig says how
often it saves checkpoints and summaries and logs its steps, and how many checkpoints it
keeps. Prints what the call returned on each task (`returned=`)."""

import tensorflow as tf
from absl import flags

import estimator_dist as ed
from model_zoo import data
from tests.programs import plain_model

FLAGS = flags.FLAGS


def main(_):
  (x, y), (x_eval, y_eval) = data.load()
  x, x_eval = x.reshape(len(x), -1), x_eval.reshape(len(x_eval), -1)

  def train_input_fn():
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(y)).batch(32)

  def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices((x_eval, y_eval)).batch(100)

  estimator = tf.estimator.Estimator(
      plain_model.model_fn, params={"learning_rate": FLAGS.learning_rate},
      config=tf.estimator.RunConfig(save_summary_steps=7, keep_checkpoint_max=2,
                                    log_step_count_steps=5, save_checkpoints_steps=20))
  metrics, exports = ed.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(train_input_fn, max_steps=FLAGS.train_steps),
      tf.estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
  print(f"returned={'metrics' if metrics else None},{exports}", flush=True)


if __name__ == "__main__":
  ed.define_flags(learning_rate=0.01, train_steps=60)
  ed.run_program(main)
