"""Evaluation in this process alone: `evaluate` (ed.evaluate), and the Estimator with
which the chief evaluates and exports beside training and at its end."""

import tensorflow as tf

from estimator_dist.strategies import base
from estimator_dist.strategies import local
from estimator_dist.task import evaluation
from estimator_dist.task import inputs
from estimator_dist.training import decorator


def evaluate(model_fn, eval_input_fn, *, model_dir, params=None, eval_steps=None,
             checkpoint_path=None, timeout_secs=None, hooks=()):
  """Evaluates `checkpoint_path` (default: the latest of `model_dir`) in this process alone,
  with evaluation `hooks`; an input of no example fails, and so does an evaluation past its
  timeout (see `evaluation.EvaluationWatch`)."""
  estimator = evaluating_estimator(model_fn, model_dir=model_dir, params=params)
  watch = evaluation.EvaluationWatch(input_fn=eval_input_fn, steps=eval_steps,
                                     timeout_secs=timeout_secs)
  return estimator.evaluate(evaluated_input_fn(eval_input_fn), steps=eval_steps,
                            checkpoint_path=checkpoint_path, hooks=[watch, *hooks])


def evaluated_input_fn(input_fn):
  """`input_fn` as this process reads it to evaluate (`inputs.evaluation_input_fn`)."""
  return inputs.evaluation_input_fn(input_fn)


def evaluating_estimator(model_fn, *, model_dir, params):
  """An Estimator of this process alone over model_dir: it evaluates and exports."""
  with base.without_tf_config():
    config = tf.estimator.RunConfig(model_dir=model_dir)
  model_fn, _ = decorator.decorated(model_fn)
  return tf.estimator.Estimator(local.local_adapter().wrap_model_fn(model_fn), config=config,
                                params=params)
