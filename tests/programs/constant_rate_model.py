"""model_fns as others write them: Horovod's Estimator example builds its optimizer with a
constant rate and reads no params; the DistributionStrategy README's passes no global step
to `minimize`. Trained through estimator_dist unchanged."""

import tensorflow as tf
from absl import flags

import estimator_dist as ed
from tests.programs import plain_model

flags.DEFINE_bool("pass_global_step", True, "Pass the global step to minimize().")
FLAGS = flags.FLAGS


def model_fn(features, labels, mode):
  logits, loss = plain_model.network(features, labels)
  if mode == tf.estimator.ModeKeys.EVAL:
    return plain_model.eval_spec(labels, logits, loss)
  optimizer = tf.compat.v1.train.AdamOptimizer(0.001)
  step = tf.compat.v1.train.get_global_step() if FLAGS.pass_global_step else None
  return tf.estimator.EstimatorSpec(mode, loss=loss,
                                    train_op=optimizer.minimize(loss, global_step=step))


if __name__ == "__main__":
  ed.define_flags(batch_size=32, train_steps=300)
  ed.run_program(lambda argv: plain_model.main(argv, model=model_fn))
