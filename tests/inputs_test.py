"""Sharding: disjoint shards covering each batch once per epoch, and no worker runs dry."""

import functools
import logging
import os
import warnings

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import estimator_dist as ed
from estimator_dist.task import inputs

TRAIN, EVAL = tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL


def worker(input_fn, workers, index, mode=TRAIN):
  context = tf.distribute.InputContext(workers, index, workers)
  return inputs.wrap_input_fn(input_fn, lambda _: context)(mode, {}, None)


def under_one_graph_seed(input_fn, workers, index, batches):
  """The first batches of a worker's share, read as Estimator reads it: in a graph with
  the job's one seed (RunConfig(tf_random_seed))."""
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(0)
    next_batch = tf.compat.v1.data.make_one_shot_iterator(
        worker(input_fn, workers, index)).get_next()
    with tf.compat.v1.Session() as session:
      return [session.run(next_batch) for _ in range(batches)]


def take(dataset, n):
  return [int(x) for x in dataset.take(n)]


def ten():
  return tf.data.Dataset.range(10)


@pytest.mark.parametrize("workers", [2, 3])
def test_shards_are_disjoint_and_cover_each_epoch(workers):
  stream = list(range(10)) * 3
  steps = 10 // workers + 1
  for i in range(workers):
    assert take(worker(ten, workers, i), steps) == stream[i::workers][:steps]
  first_epoch = sorted(x for i in range(workers)
                       for x in take(worker(ten, workers, i), steps)[:len(range(i, 10, workers))])
  assert first_epoch == list(range(10))


def test_uneven_shards_never_run_dry():
  # 10 elements for 3 workers: 4, 3 and 3 per epoch; all keep going at the same pace.
  for i in range(3):
    assert len(take(worker(ten, 3, i), 50)) == 50


def test_eval_input_is_neither_sharded_nor_repeated():
  assert take(worker(ten, 3, 1, EVAL), 100) == list(range(10))


def autotuned(dataset):
  return dataset.options().autotune.enabled


@pytest.fixture
def one_cpu():
  """This process on one of its CPUs for the test, as a task of a multi-process host is."""
  cpus = os.sched_getaffinity(0)
  os.sched_setaffinity(0, {min(cpus)})
  yield
  os.sched_setaffinity(0, cpus)


def chosen(**autotune):
  options = tf.data.Options()
  for name, value in autotune.items():
    setattr(options.autotune, name, value)
  return lambda params: ten().with_options(options)


def test_on_one_cpu_datasets_are_read_without_autotuning_unless_the_program_chose(one_cpu):
  for workers in (1, 2):
    assert autotuned(worker(ten, workers, 0)) is False
    assert autotuned(worker(chosen(enabled=True), workers, 0)) is True
  assert take(worker(ten, 2, 1), 7) == [1, 3, 5, 7, 9, 1, 3]
  assert autotuned(worker(chosen(cpu_budget=1), 1, 0)) is None  # Autotuning, on its budget.
  assert autotuned(worker(ten, 2, 0, EVAL)) is False
  seen = []

  def eval_input_fn(params, mode):
    seen.append((params, mode))
    return ten()
  evaluated = inputs.evaluation_input_fn(eval_input_fn)(EVAL, {"a": 1}, None)
  assert autotuned(evaluated) is False and take(evaluated, 20) == list(range(10))
  assert seen == [({"a": 1}, EVAL)]
  assert autotuned(inputs.evaluation_input_fn(chosen(enabled=False))(EVAL, {}, None)) is False
  features = tf.compat.v1.estimator.inputs.numpy_input_fn(np.arange(4), shuffle=False)
  assert inputs.evaluation_input_fn(features) is features  # Read through queues, as ever.


def test_in_a_graph_on_one_cpu_a_prefetch_ends_the_pipeline_and_nothing_warns(one_cpu):
  with tf.Graph().as_default() as graph:
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      dataset = worker(ten, 2, 0)
    assert dataset.element_spec == ten().element_spec
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")  # options() in a graph: the legacy value.
      assert autotuned(dataset) is False
  assert "PrefetchDataset" in {op.type for op in graph.get_operations()}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_on_more_cpus_autotuning_stays_as_the_program_left_it():
  assert autotuned(worker(ten, 2, 0)) is None
  assert autotuned(inputs.evaluation_input_fn(ten)(EVAL, {}, None)) is None


def test_input_fn_with_input_context_shards_itself():
  seen = []

  def input_fn(input_context):
    seen.append((input_context.num_input_pipelines, input_context.input_pipeline_id))
    return tf.data.Dataset.range(10).shard(input_context.num_input_pipelines,
                                           input_context.input_pipeline_id)
  assert take(worker(input_fn, 2, 1), 6) == [1, 3, 5, 7, 9, 1]
  assert set(seen) == {(2, 1)}  # Each call (the check for data too) gets this worker's context.


def test_an_empty_training_input_is_an_error_naming_the_input_fn():
  def empty_input():
    return tf.data.Dataset.range(10).filter(lambda x: x > 100).batch(2)
  with pytest.raises(ed.ConfigError) as e:
    worker(empty_input, 1, 0)
  assert str(e.value) == (
      "the training input_fn empty_input gives no data: its dataset is empty, so no step could "
      "train. Check what it reads (files, arrays, filters), and that a batch with "
      "drop_remainder=True is not larger than the data.")
  with tf.Graph().as_default():  # As Estimator calls it.
    with pytest.raises(ed.ConfigError, match="gives no data"):
      worker(empty_input, 2, 1)
  assert take(worker(empty_input, 1, 0, EVAL), 5) == []  # Evaluation input is not checked.


def test_unseeded_shuffle_is_the_same_on_every_worker_under_one_graph_seed():
  def input_fn():
    return tf.data.Dataset.range(10).shuffle(10).batch(1)
  seen = [int(batch[0]) for i in range(2) for batch in under_one_graph_seed(input_fn, 2, i, 5)]
  assert sorted(seen) == list(range(10))


def test_features_and_labels_cannot_be_split():
  def input_fn():
    return tf.ones([4, 2]), tf.ones([4])
  with pytest.raises(ed.ConfigError, match="cannot be split among 2 workers"):
    worker(input_fn, 2, 0)
  features, _ = worker(input_fn, 1, 0)
  assert features.shape == (4, 2)


def test_input_fn_with_arguments_estimator_cannot_pass():
  def input_fn(batch_size):
    return tf.data.Dataset.range(batch_size)
  with pytest.raises(ed.ConfigError, match=r"needs \['batch_size'\], which Estimator cannot"):
    inputs.wrap_input_fn(input_fn, lambda _: None)


def test_a_partial_whose_other_arguments_have_defaults_is_called_as_estimator_calls_it():
  # TensorFlow's cifar10_estimator tutorial: use_distortion_for_training keeps its default.
  def input_fn(data_dir, subset, num_shards, batch_size, use_distortion_for_training=True):
    del data_dir, subset, num_shards, use_distortion_for_training
    return tf.data.Dataset.range(8).batch(batch_size)
  tutorial_form = functools.partial(input_fn, "/data", subset="train", num_shards=1,
                                    batch_size=2)
  assert take(worker(tutorial_form, 2, 0).unbatch(), 4) == [0, 1, 4, 5]


def write_files(directory, sizes):
  """TFRecord files part-0, part-1, ... holding consecutive integers; returns the pattern."""
  start = 0
  for f, size in enumerate(sizes):
    with tf.io.TFRecordWriter(str(directory / f"part-{f}.tfrecord")) as writer:
      for i in range(start, start + size):
        writer.write(str(i).encode())
    start += size
  return str(directory / "part-*.tfrecord")


def file_input_fn(pattern):
  def input_fn():
    files = tf.data.Dataset.list_files(pattern, shuffle=False)
    return tf.data.TFRecordDataset(files).map(
        lambda s: tf.strings.to_number(s, tf.int64)).batch(4)
  return input_fn


def first_epoch(dataset, size):
  """The first `size` elements of a batched stream, and the next batch."""
  seen, batches = [], iter(dataset)
  while len(seen) < size:
    seen += [int(x) for x in next(batches)]
  return seen, [int(x) for x in next(batches)]


@pytest.mark.parametrize("workers,sizes", [(2, [10, 10, 10, 10, 3]), (3, [10, 10, 10, 10, 3]),
                                           (3, [7, 1, 5])])
def test_files_are_sharded_by_file_and_cover_each_epoch_once(tmp_path, workers, sizes):
  input_fn = file_input_fn(write_files(tmp_path, sizes))
  starts = [sum(sizes[:f]) for f in range(len(sizes))]
  everything = []
  for i in range(workers):
    mine = [x for f in range(i, len(sizes), workers) for x in range(starts[f], starts[f] + sizes[f])]
    seen, next_batch = first_epoch(worker(input_fn, workers, i), len(mine))
    assert seen == mine  # whole files, in order
    assert next_batch == mine[:len(next_batch)]  # and then the same files again
    everything += seen
  assert sorted(everything) == list(range(sum(sizes)))


def test_fewer_files_than_workers_shards_by_batch(tmp_path):
  input_fn = file_input_fn(write_files(tmp_path, [9]))  # batches [0-3], [4-7], [8]
  assert [[int(x) for x in b] for b in worker(input_fn, 2, 0).take(3)] == [
      [0, 1, 2, 3], [8], [4, 5, 6, 7]]
  assert [[int(x) for x in b] for b in worker(input_fn, 2, 1).take(2)] == [
      [4, 5, 6, 7], [0, 1, 2, 3]]


def test_an_empty_share_by_file_makes_every_worker_shard_by_batch(tmp_path):
  input_fn = file_input_fn(write_files(tmp_path, [5, 0]))  # batches [0-3], [4]
  assert [[int(x) for x in b] for b in worker(input_fn, 2, 1).take(2)] == [[4], [4]]


def test_an_iterator_input_fn_remade_in_a_map_is_read_by_batch_and_says_so(tmp_path, caplog):
  # Cloud ML's census form: files read, a label popped from the iterator's tensors. The
  # readers then sit inside a map, where tf.data's FILE sharding shards elements instead.
  pattern = write_files(tmp_path, [4, 4])  # batches [0-3], [4-7]

  def input_fn():
    files = tf.data.Dataset.list_files(pattern, shuffle=False)
    numbers = tf.data.TFRecordDataset(files).map(
        lambda s: {"x": tf.strings.to_number(s, tf.int64), "label": tf.constant(0)})
    features = tf.compat.v1.data.make_one_shot_iterator(numbers.batch(2)).get_next()
    return features, features.pop("label")
  with caplog.at_level(logging.INFO, logger="absl"):
    shares = [[as_list(b[0]["x"]) for b in worker(input_fn, 2, i).take(2)] for i in (0, 1)]
  assert shares == [[[0, 1], [4, 5]], [[2, 3], [6, 7]]]
  assert "training input is shard 0 of 2, by batch" in caplog.text


def as_list(batch):
  return [int(v) for v in tf.reshape(batch, [-1])]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_numpy_input_fn_is_split_by_batch_and_covers_each_epoch(workers):
  x = {"a": np.arange(10, dtype=np.int64), "b": np.arange(10, dtype=np.int64) * 10}
  input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
      x, np.arange(10, dtype=np.int64) * 100, batch_size=2, num_epochs=1, shuffle=False)
  seen = []
  for i in range(workers):
    batches = list(worker(input_fn, workers, i).take(len(range(i, 5, workers))))
    for features, labels in batches:
      assert as_list(features["b"]) == [10 * a for a in as_list(features["a"])]
      assert as_list(labels) == [100 * a for a in as_list(features["a"])]
      seen += as_list(features["a"])
  assert sorted(seen) == list(range(10))


def test_a_pandas_input_fn_keeps_its_columns_and_target():
  frame = pd.DataFrame({"a": np.arange(6), "b": np.arange(6) * 10})
  input_fn = tf.compat.v1.estimator.inputs.pandas_input_fn(
      frame, pd.Series(np.arange(6) * 100), batch_size=3, shuffle=True)
  seen = []
  for i in range(2):
    (features, labels), = under_one_graph_seed(input_fn, 2, i, 1)
    assert sorted(features) == ["a", "b"]
    assert list(labels) == [100 * a for a in features["a"]]
    seen += list(features["a"])
  assert sorted(seen) == list(range(6))


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_generator_backed_dataset_is_split_by_batch_and_covers_each_epoch(workers):
  """Dataset.from_generator, as users read records from Python: one generator per worker,
  each keeps its own batches; together one epoch is every record once."""
  def records():
    for i in range(10):
      yield {"a": i, "b": 10 * i}, 100 * i

  def input_fn():
    signature = ({"a": tf.TensorSpec((), tf.int64), "b": tf.TensorSpec((), tf.int64)},
                 tf.TensorSpec((), tf.int64))
    return tf.data.Dataset.from_generator(records, output_signature=signature).batch(2)
  seen = []
  for i in range(workers):
    for features, labels in worker(input_fn, workers, i).take(len(range(i, 5, workers))):
      assert as_list(features["b"]) == [10 * a for a in as_list(features["a"])]
      assert as_list(labels) == [100 * a for a in as_list(features["a"])]
      seen += as_list(features["a"])
  assert sorted(seen) == list(range(10))


def test_the_batch_of_the_training_input_is_noted_for_the_examples_per_step():
  """A program that gives the toolkit no batch size still has its examples/sec measured:
  the batch is read from the first element of its training input."""
  def batches():
    return tf.data.Dataset.range(100).batch(8).map(lambda x: ({"x": x, "y": 2 * x}, x))
  worker(batches, 2, 0)
  assert inputs.training_batch() == 8
  worker(ten, 2, 0)  # Scalars: no batch to read.
  assert inputs.training_batch() is None
  worker(batches, 2, 0)
  # Examples not batched: an image and its scalar label (not a batch of 28).
  worker(lambda: tf.data.Dataset.from_tensors((tf.zeros([28, 28]), 1)).repeat(3), 2, 0)
  assert inputs.training_batch() is None
  worker(batches, 2, 0)
  worker(lambda: (tf.zeros([4, 2]), tf.zeros([4])), 1, 0)  # Tensors: not read, not kept.
  assert inputs.training_batch() is None
