"""A TrainSpec without max_steps: TensorFlow trains until the input ends; a job trains the
steps of one pass over its input, counted before training from the datasets' sizes.

Every task counts every worker's share the same way, so all agree without talking: a
synchronous step takes one batch from each replica's pipeline, so the job trains the
batches of the smallest share (divided among a process's replicas); an asynchronous
step takes one batch of one worker, so the job trains the batches of all shares. The
count is the job's end from step 0: a job resumed from a checkpoint ends at the same
step. A dataset whose size tf.data cannot tell before reading it (files, a filter) is
read once to count it (for at most COUNT_SECS: one that goes on may never end).
"""

import time

import tensorflow as tf
from absl import logging
from tensorflow.python.eager import context as eager_context  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.task import array_inputs
from estimator_dist.task import inputs
from estimator_dist.task import iterator_inputs

# The train_steps of a run whose TrainSpec has no max_steps, until `steps` counts them.
UNTIL_THE_INPUT_ENDS = 2**62
# How long a dataset whose size tf.data cannot tell (files, a filter) is read to count it.
COUNT_SECS = 60


def resolved(options, input_fn, adapter, *, params, config):
  """`options`, with the steps of one pass over `input_fn` where the TrainSpec had no
  max_steps (train_steps UNTIL_THE_INPUT_ENDS)."""
  if options.train_steps != UNTIL_THE_INPUT_ENDS:
    return options
  return options.replace(train_steps=steps(input_fn, adapter, params=params, config=config))


_SPEC = ("the TrainSpec has no max_steps", "set TrainSpec(max_steps=...)")
TRAIN_CALL = ("Estimator.train() has neither steps nor max_steps",
              "give train() steps=... (or max_steps=...)")


def _read_to_its_end(dataset, *, asked, fix):
  """The batches of a dataset whose size tf.data cannot tell (files, a filter), read once
  to count them; a ConfigError once that took COUNT_SECS (it may never end)."""
  deadline, count = time.monotonic() + COUNT_SECS, 0
  for count, _ in enumerate(dataset, 1):
    if time.monotonic() > deadline:
      raise errors.ConfigError(
          f"{asked} and its input_fn's dataset is of a size tf.data cannot tell before "
          f"reading it; {count} batches were read in {COUNT_SECS}s to count them, and it "
          f"went on (it may never end): {fix}.")
  return count


def steps(input_fn, adapter, *, params, config, why=_SPEC):
  """The global steps of one pass over `input_fn`'s training data under `adapter`; `why`:
  (what asks for it, how to give the steps instead), for its lines."""
  asked, fix = why
  if array_inputs.made_by(input_fn):
    input_fn = array_inputs.as_dataset_input_fn(input_fn)
  args = inputs.check_input_fn(input_fn)
  pipelines = max(adapter.task.size, 1) if not adapter.traits.one_process else 1
  replicas = max(adapter.num_replicas // pipelines, 1) if adapter.synchronous else 1

  def batches(context):
    with eager_context.eager_mode():  # Its size, without a session.
      dataset = iterator_inputs.dataset_of(lambda: input_fn(**inputs.estimator_kwargs(
          args, mode=tf.estimator.ModeKeys.TRAIN, params=params, config=config,
          input_context=context)))
      if not isinstance(dataset, tf.data.Dataset):
        raise errors.ConfigError(
            f"{asked} and its input_fn returns {type(dataset).__name__}, whose end cannot "
            f"be counted before training: return a tf.data.Dataset, or {fix}.")
      count = int(dataset.cardinality())
      if count == tf.data.UNKNOWN_CARDINALITY:
        return _read_to_its_end(dataset, asked=asked, fix=fix)
    if count < 0:
      raise errors.ConfigError(
          f"{asked} and its input_fn's dataset is endless (it repeats): a job needs its end "
          f"before training, so {fix}.")
    return count

  if "input_context" in args:  # It shards itself: count each worker's share.
    shares = [batches(tf.distribute.InputContext(pipelines, index, adapter.num_replicas))
              for index in range(pipelines)]
  else:  # The toolkit deals it by batch: worker i takes batches i, i + N, ...
    total = batches(None)
    shares = [total // pipelines + (index < total % pipelines) for index in range(pipelines)]
  if adapter.synchronous:
    count, how = min(shares) // replicas, "the smallest worker's share"
  else:
    count, how = sum(shares), "every worker's share, one batch a step"
  if count < 1:
    raise errors.ConfigError(
        f"{asked} and one pass over its input is no step ({shares} batches for "
        f"{pipelines} worker(s), {replicas} replica(s) each): give it more data or {fix}.")
  logging.info(command_line.line("%s: one pass over the input is %d steps (%s; batches per "
                                 "worker %s)"), asked, count, how, shares)
  return count
