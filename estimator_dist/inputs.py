"""Input sharding: each worker reads a disjoint part of the training data, forever.

The user's input_fn builds the pipeline a single-machine user writes, batched by the
per-worker batch size. For training, the wrapped input_fn repeats that pipeline and
keeps every `num_shards`-th batch, starting at this worker's index:

* shards are disjoint and, over the workers together, cover every batch once per epoch,
  provided every worker builds the same order (the toolkit sets one `tf_random_seed` on
  all workers, so an unseeded `shuffle` gives the same order everywhere);
* no worker runs dry before another: unequal shard sizes cannot make a synchronous
  step wait forever, and every worker runs exactly `train_steps` steps.

An input_fn that takes `input_context` shards itself; it gets the context of this
worker (under Horovod too) and is only repeated.
"""

import tensorflow as tf
from absl import logging

from estimator_dist import errors

_INPUT_FN_ARGS = ("mode", "params", "config", "input_context")


def check_input_fn(input_fn, name="input_fn"):
  return errors.check_args(input_fn, name, _INPUT_FN_ARGS,
                           "Bind other arguments with functools.partial.")


def wrap_input_fn(input_fn, input_context_for):
  """Wraps `input_fn` so that TRAIN mode reads this worker's shard, repeated.

  `input_context_for(estimator_context)` gives the tf.distribute.InputContext of this
  worker (None for a single pipeline).
  """
  args = check_input_fn(input_fn)

  def sharded_input_fn(mode, params, config, input_context=None):
    context = input_context_for(input_context)
    kwargs = {k: v for k, v in (("mode", mode), ("params", params), ("config", config))
              if k in args}
    if "input_context" in args:
      kwargs["input_context"] = context
    result = input_fn(**kwargs)
    if mode != tf.estimator.ModeKeys.TRAIN:
      return result
    if not isinstance(result, tf.data.Dataset):
      if context is None or context.num_input_pipelines == 1:
        return result
      raise errors.ConfigError(
          f"input_fn returned {type(result).__name__}, which cannot be split among "
          f"{context.num_input_pipelines} workers. Return a tf.data.Dataset, or take an "
          f"`input_context` argument and shard the data yourself.")
    result = result.repeat()
    if context is not None and context.num_input_pipelines > 1 and "input_context" not in args:
      logging.info("estimator_dist: training input is shard %d of %d",
                   context.input_pipeline_id, context.num_input_pipelines)
      result = result.shard(context.num_input_pipelines, context.input_pipeline_id)
    return result

  return sharded_input_fn
