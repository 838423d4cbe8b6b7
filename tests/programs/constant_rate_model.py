"""model_fns as others write them: Horovod's Estimator example builds its optimizer with a
constant rate, reads no params and feeds numpy_input_fn; the DistributionStrategy
README's passes no global step to `minimize`. Trained through estimator_dist unchanged."""

import tensorflow as tf
from absl import flags

import estimator_dist as ed
from model_zoo import data
from tests.programs import plain_model

flags.DEFINE_bool("pass_global_step", True, "Pass the global step to minimize().")
flags.DEFINE_bool("numpy_input", False, "Read the data with numpy_input_fn, as Horovod's "
                  "Estimator example does.")
FLAGS = flags.FLAGS


def model_fn(features, labels, mode):
  logits, loss = plain_model.network(features, labels)
  if mode == tf.estimator.ModeKeys.EVAL:
    return plain_model.eval_spec(labels, logits, loss)
  optimizer = tf.compat.v1.train.AdamOptimizer(0.001)
  step = tf.compat.v1.train.get_global_step() if FLAGS.pass_global_step else None
  return tf.estimator.EstimatorSpec(mode, loss=loss,
                                    train_op=optimizer.minimize(loss, global_step=step))


def main(argv):
  if not FLAGS.numpy_input:
    plain_model.main(argv, model=model_fn)
    return
  options = ed.options_from_flags()
  (x, y), (x_eval, y_eval) = data.load()
  numpy_input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn
  train_input_fn = numpy_input_fn(x.reshape(len(x), -1), y, batch_size=options.batch_size,
                                  num_epochs=None, shuffle=True)
  eval_input_fn = numpy_input_fn(x_eval.reshape(len(x_eval), -1), y_eval, batch_size=100,
                                 num_epochs=1, shuffle=False)
  ed.train_and_evaluate(model_fn, train_input_fn, eval_input_fn, options=options)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, train_steps=300)
  ed.run_program(main)
