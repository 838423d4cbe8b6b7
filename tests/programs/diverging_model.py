"""plain_model whose loss becomes NaN from global step --nan_from_step on.

  python -m tests.programs.diverging_model --model_dir=/tmp/m --nan_from_step=12 \
      --save_checkpoints_steps=5
"""

import functools

import tensorflow as tf
from absl import flags

import estimator_dist as ed
from tests.programs import plain_model

flags.DEFINE_integer("nan_from_step", 12, "First global step whose loss is NaN.")
FLAGS = flags.FLAGS


def model_fn(features, labels, mode, params):
  spec = plain_model.model_fn(features, labels, mode, params)
  if mode != tf.estimator.ModeKeys.TRAIN:
    return spec
  step = tf.compat.v1.train.get_global_step()
  poison = tf.where(step >= FLAGS.nan_from_step, float("nan"), 1.0)
  loss = spec.loss * poison
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
  return tf.estimator.EstimatorSpec(mode, loss=loss,
                                    train_op=optimizer.minimize(loss, global_step=step))


if __name__ == "__main__":
  ed.define_flags(batch_size=32, learning_rate=0.01, train_steps=200)
  ed.run_program(functools.partial(plain_model.main, model=model_fn))
