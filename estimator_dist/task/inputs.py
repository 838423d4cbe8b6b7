"""Input sharding: each worker reads a disjoint part of the training data, forever.

The user's input_fn builds the pipeline a single-machine user writes, batched by the
per-worker batch size. For training, the wrapped input_fn repeats that pipeline and
gives this worker its part of it:

* by file, when the pipeline reads files (TFRecord, text, fixed-length records) and
  every worker's share of the files holds data: worker i reads files i, i+N, ...
  (tf.data's own FILE auto-sharding, applied to the repeated pipeline);
* otherwise by batch: every N-th batch of the repeated stream, starting at index i.

Either way:

* shards are disjoint and, over the workers together, cover every batch once per epoch,
  provided every worker builds the same order (the toolkit sets one `tf_random_seed` on
  all workers, so an unseeded `shuffle` gives the same order everywhere);
* no worker runs dry before another: unequal shard sizes cannot make a synchronous
  step wait forever, and every worker runs exactly `train_steps` steps.

A `numpy_input_fn` or `pandas_input_fn` is read as a Dataset of its arrays first
(`array_inputs`), a TF1 input_fn that returns its iterator's tensors as that iterator's
Dataset (`iterator_inputs`). An input_fn that takes `input_context` shards itself; it gets the
context of this worker (under Horovod too) and is only repeated.

A process that may run on one CPU only reads its Datasets without tf.data's autotuning
(`read_on_one_cpu`).
"""

import os
import warnings

import tensorflow as tf
from absl import logging
from tensorflow.python.data.experimental.ops import distribute
from tensorflow.python.eager import context as eager_context  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.task import array_inputs
from estimator_dist.task import iterator_inputs

_INPUT_FN_ARGS = ("mode", "params", "config", "input_context")


def check_input_fn(input_fn, name="input_fn"):
  return errors.check_args(input_fn, name, _INPUT_FN_ARGS,
                           "Bind other arguments with functools.partial.")


def wrap_input_fn(input_fn, input_context_for):
  """Wraps `input_fn` so that TRAIN mode reads this worker's shard, repeated.

  `input_context_for(estimator_context)` gives the tf.distribute.InputContext of this
  worker (None for a single pipeline).
  """
  if array_inputs.made_by(input_fn):
    input_fn = array_inputs.as_dataset_input_fn(input_fn)
  args = check_input_fn(input_fn)

  def sharded_input_fn(mode, params, config, input_context=None):
    context = input_context_for(input_context)
    kwargs = estimator_kwargs(args, mode=mode, params=params, config=config)
    if "input_context" in args:
      kwargs["input_context"] = context
    if mode != tf.estimator.ModeKeys.TRAIN:
      return read_on_one_cpu(input_fn(**kwargs))
    _seen_batch.clear()  # Read anew from this input (not at all from tensors).

    def make_dataset():
      return iterator_inputs.dataset_of(lambda: input_fn(**kwargs))
    result = _training_share(make_dataset(), make_dataset, context,
                             shards_itself="input_context" in args,
                             name=getattr(input_fn, "__name__", "input_fn"))
    return read_on_one_cpu(result)

  return sharded_input_fn


def _training_share(result, make_dataset, context, *, shards_itself, name):
  """This worker's share of the training input `result`, repeated (see the module doc)."""
  if not isinstance(result, tf.data.Dataset):
    if context is None or context.num_input_pipelines == 1:
      return result
    raise errors.ConfigError(
        f"input_fn returned {type(result).__name__}, which cannot be split among "
        f"{context.num_input_pipelines} workers. Return a tf.data.Dataset, or take an "
        f"`input_context` argument and shard the data yourself.")
  _check_has_data(make_dataset, name)
  if context is None or context.num_input_pipelines == 1 or shards_itself:
    return result.repeat()
  by_file = not iterator_inputs.remade(result) and _shards_by_file(make_dataset, context)
  logging.info(command_line.line("training input is shard %d of %d, by %s"),
               context.input_pipeline_id, context.num_input_pipelines,
               "file" if by_file else "batch")
  if by_file:
    return _file_shard(result.repeat(), context.num_input_pipelines, context.input_pipeline_id)
  return result.repeat().shard(context.num_input_pipelines, context.input_pipeline_id)


def read_on_one_cpu(result):
  """`result` (an input_fn's) as this process reads it: a Dataset, where this process
  may run on one CPU only (a task of a multi-process host, a sweep's trial) and the
  program's options leave autotuning alone, without tf.data's autotuning and with a
  prefetch at its end.

  There, TensorFlow 2.15 destroys the autotuning thread only once its current period has
  passed, and the periods double from 10 ms to a minute: a session that read a Dataset for
  a minute took up to a minute more to close. On one CPU autotuning has little to tune
  and its default rewrites little to parallelize; the prefetch one of them adds is added
  here (prefetch(AUTOTUNE) grows its buffer while it runs empty). On more CPUs autotuning
  stays on.
  """
  if not isinstance(result, tf.data.Dataset) or len(os.sched_getaffinity(0)) != 1:
    return result
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # In a graph, options() says they may be stale.
    if result.options().autotune != tf.data.Options().autotune:
      return result  # The program's choice.
  options = tf.data.Options()
  options.autotune.enabled = False
  return result.prefetch(tf.data.AUTOTUNE).with_options(options)


def evaluation_input_fn(input_fn):
  """`input_fn` as Estimator calls it to evaluate, read as `read_on_one_cpu` says; one of
  numpy or pandas (read through queues) is given as it is."""
  if array_inputs.made_by(input_fn):
    return input_fn
  args = check_input_fn(input_fn, "eval_input_fn")

  def evaluated_input_fn(mode, params, config):
    return read_on_one_cpu(input_fn(**estimator_kwargs(args, mode=mode, params=params,
                                                        config=config)))

  return evaluated_input_fn


def estimator_kwargs(args, **values):
  """Those of `values` whose names are among an input_fn's `args` (`check_input_fn`): what
  Estimator passes it."""
  return {name: value for name, value in values.items() if name in args}


def training_batch():
  """The batch of the training input this process last wrapped (the leading dimension of
  its first element): None when it was not read before training (a pipeline that builds
  only in a graph) or its parts differ in it."""
  return _seen_batch[0] if _seen_batch else None


_seen_batch = []


def _check_has_data(make_dataset, name):
  """Raises if the training dataset is empty: repeated, it would end at once and every
  worker would report success after training no step. Notes its first element's batch."""
  try:
    with eager_context.eager_mode():  # Estimator calls input_fn in a graph.
      first = next(iter(make_dataset()))
    # A batch: every part has a leading dimension, and the same (an element of examples
    # not yet batched, an image and its scalar label, has none).
    shapes = [getattr(t, "shape", None) for t in tf.nest.flatten(first)]
    sizes = {s[0] for s in shapes if s is not None and s.rank}
    if shapes and all(s is not None and s.rank for s in shapes) and len(sizes) == 1:
      _seen_batch.append(int(sizes.pop()))
  except StopIteration:
    raise errors.ConfigError(
        f"the training input_fn {name} gives no data: its dataset is empty, so no step "
        f"could train. Check what it reads (files, arrays, filters), and that a batch with "
        f"drop_remainder=True is not larger than the data.") from None
  except Exception:  # pylint: disable=broad-except
    pass  # A pipeline that only builds in a graph: it is not checked.


def _file_shard(dataset, num_shards, index):
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.FILE
  return distribute._AutoShardDataset(  # pylint: disable=protected-access
      dataset.with_options(options), num_shards, index)


def _shards_by_file(make_dataset, context):
  """Whether every worker's share by file holds data.

  Every worker probes all shares, so all reach the same answer: by file, or all by batch.
  """
  try:
    with eager_context.eager_mode():  # Estimator calls input_fn in a graph.
      dataset = make_dataset()
      for index in range(context.num_input_pipelines):
        next(iter(_file_shard(dataset, context.num_input_pipelines, index)))
    return True
  except Exception:  # pylint: disable=broad-except
    # An empty share, no file source, fewer files than workers, or a pipeline that only
    # builds in a graph.
    return False
