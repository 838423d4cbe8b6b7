"""A model as a single-machine user writes it, trained through estimator_dist unchanged.

No decorator, no hvd import, no sharding, no repeat: the toolkit adds what each
strategy needs. Every training task prints `steps_run=N` when its training ends.
"""

import json
import os
import time

import tensorflow as tf
from absl import flags

import estimator_dist as ed
from model_zoo import data

flags.DEFINE_integer("examples", None, "Train on the first N examples only.")
flags.DEFINE_float("step_secs", 0.0, "Make each training step last this long at least "
                   "(a heavier model, or one slower than its evaluation).")
flags.DEFINE_float("eval_secs", 0.0, "Make each evaluation last this long at least, spread "
                   "over batches of 10 examples (a long evaluation beside training).")
flags.DEFINE_integer("unavailable_at_run", None, "worker:0 meets an error from a peer "
                     "(UnavailableError) in this session run of its training, once per "
                     "model_dir: TensorFlow then creates its session again.")
flags.DEFINE_bool("idle_after_training", False, "Then wait for ever, using no CPU (as a "
                  "session waiting for a peer that has exited does).")
FLAGS = flags.FLAGS


def logits_of(features):
  """One hidden layer."""
  hidden = tf.compat.v1.layers.dense(features, 64, activation=tf.nn.relu)
  return tf.compat.v1.layers.dense(hidden, 10)


def network(features, labels):
  """(logits, loss)."""
  logits = logits_of(features)
  return logits, tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)


def eval_spec(labels, logits, loss):
  accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))
  return tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.EVAL, loss=loss,
                                    eval_metric_ops={"accuracy": accuracy})


def model_fn(features, labels, mode, params):
  if mode == tf.estimator.ModeKeys.PREDICT:  # A plain Estimator serves the checkpoint.
    return tf.estimator.EstimatorSpec(mode, predictions=tf.argmax(logits_of(features), 1))
  logits, loss = network(features, labels)
  if mode == tf.estimator.ModeKeys.EVAL:
    return eval_spec(labels, logits, loss)
  optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
  train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class CountSteps(tf.estimator.SessionRunHook):

  def begin(self):
    self.steps = 0

  def after_run(self, run_context, run_values):
    self.steps += 1

  def end(self, session):
    print(f"steps_run={self.steps}", flush=True)


class StepTakes(tf.estimator.SessionRunHook):
  """Sleeps out the rest of `secs` after each training step."""

  def __init__(self, secs):
    self._secs = secs

  def before_run(self, run_context):
    self._start = time.monotonic()

  def after_run(self, run_context, run_values):
    time.sleep(max(0.0, self._secs - (time.monotonic() - self._start)))


class PeerErrorOnce(tf.estimator.SessionRunHook):
  """Raises UnavailableError in the `run`-th session run of worker:0, once per model_dir,
  as a closed socket to a peer does."""

  def __init__(self, run, model_dir):
    self._run, self._runs, self._mark = run, 0, os.path.join(model_dir, "peer_error_raised")

  def after_run(self, run_context, run_values):
    self._runs += 1
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    if (self._runs == self._run and (task.get("type"), task.get("index")) == ("worker", 0)
        and not os.path.exists(self._mark)):
      open(self._mark, "w").close()
      raise tf.errors.UnavailableError(None, None, "Socket closed (a test's)")


def step_hooks():
  hooks = [StepTakes(FLAGS.step_secs)] if FLAGS.step_secs else []
  if FLAGS.unavailable_at_run:
    hooks.append(PeerErrorOnce(FLAGS.unavailable_at_run, ed.options_from_flags().model_dir))
  return hooks


def main(_, model=model_fn):
  options = ed.options_from_flags()
  (x, y), (x_eval, y_eval) = data.load()
  x, y = x.reshape(len(x), -1)[:FLAGS.examples], y[:FLAGS.examples]
  x_eval = x_eval.reshape(len(x_eval), -1)

  def train_input_fn():
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(max(len(y), 1)).batch(
        options.batch_size)

  def eval_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices((x_eval, y_eval))
    if not FLAGS.eval_secs:
      return dataset.batch(100)
    pause = FLAGS.eval_secs / -(-len(y_eval) // 10)
    return dataset.batch(10).map(lambda x, y: (tf.ensure_shape(tf.numpy_function(
        lambda t: time.sleep(pause) or t, [x], x.dtype, stateful=True), x.shape), y))
  ed.train_and_evaluate(model, train_input_fn, eval_input_fn,
                        hooks=[CountSteps(), *step_hooks()], options=options)
  while FLAGS.idle_after_training:
    time.sleep(3600)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, learning_rate=0.01, train_steps=200)
  ed.run_program(main)
