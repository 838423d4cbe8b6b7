"""TF1 input_fns that end in an iterator, read back as the Dataset they iterate."""

import threading

import numpy as np
import pytest
import tensorflow as tf

from estimator_dist import errors
from estimator_dist.task import iterator_inputs

X = np.arange(8, dtype=np.float32).reshape(4, 2)
Y = np.arange(4, dtype=np.int64)


def as_is():
  dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).shuffle(4).batch(2)
  return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()


def label_popped():
  dataset = tf.data.Dataset.from_tensor_slices({"x": X, "label": Y}).batch(2)
  features = tf.compat.v1.data.make_initializable_iterator(dataset).get_next()
  return features, tf.cast(features.pop("label"), tf.int32) * 10


def popped_in_place():
  dataset = tf.data.Dataset.from_tensor_slices(({"x": X, "w": X}, Y)).batch(2)
  features, labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
  features.pop("w")  # The dict get_next() gave, changed where it is.
  return features, labels


@pytest.mark.parametrize("input_fn, label_dtype, labels", [
    (as_is, tf.int64, None), (label_popped, tf.int32, [[0, 10], [20, 30]]),
    (popped_in_place, tf.int64, [[0, 1], [2, 3]])])
def test_the_tensors_of_an_iterator_are_its_dataset_again(input_fn, label_dtype, labels):
  with tf.Graph().as_default():  # As Estimator calls an input_fn.
    dataset = iterator_inputs.dataset_of(input_fn)
    assert isinstance(dataset, tf.data.Dataset)
    assert dataset.element_spec[1].dtype == label_dtype, dataset.element_spec
    assert sorted(dataset.element_spec[0]) == ["x"], dataset.element_spec
  batches = list(iterator_inputs.dataset_of(input_fn))  # Eagerly, as the shards are probed.
  if labels:
    assert [b[1].numpy().tolist() for b in batches] == labels
    assert [b[0]["x"].numpy().tolist() for b in batches] == [X[:2].tolist(), X[2:].tolist()]
  else:  # Shuffled: every example once.
    assert sorted(sum((b[1].numpy().tolist() for b in batches), [])) == [0, 1, 2, 3]
  assert tf.compat.v1.data.make_one_shot_iterator.__name__ == "make_one_shot_iterator"


def test_tensors_of_no_dataset_pass_and_two_iterators_are_one_line():
  with tf.Graph().as_default():
    constant = iterator_inputs.dataset_of(lambda: (tf.constant([1.0]), tf.constant([0])))
    assert not isinstance(constant, tf.data.Dataset)  # inputs.py says it cannot be split.

    def two():
      first = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(3)).get_next()
      second = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(3)).get_next()
      return {"a": first}, second
    with pytest.raises(errors.ConfigError, match="makes iterators of 2 Datasets"):
      iterator_inputs.dataset_of(two)


def test_another_threads_iterators_are_tensorflows_own_while_one_is_read():
  """parameter_server's client trains its workers in threads: TensorFlow's own input
  pipeline in one makes an iterator while another thread's input_fn is read."""
  made = []

  def input_fn():
    dataset = tf.data.Dataset.range(3)
    other = threading.Thread(target=lambda: made.append(
        tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(2))))
    other.start()
    other.join()
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
  with tf.Graph().as_default():
    assert isinstance(iterator_inputs.dataset_of(input_fn), tf.data.Dataset)
  assert made and all(not isinstance(m, tf.data.Dataset) for m in made), made
  assert tf.compat.v1.data.make_one_shot_iterator.__name__ == "make_one_shot_iterator"
