"""TF1 input_fns that end in an iterator, distributed as written.

TensorFlow 1 trainers (Cloud ML Engine's samples among them) end their input_fn with
`tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()` (or an initializable
iterator), maybe take the tensors apart (`features.pop("label")`), and return tensors, not
the Dataset. While such an input_fn runs, iterator creation is routed (`iterating`): the
Dataset it is made of is seen before the iterator exists, and the input_fn's result
becomes a Dataset again (`as_dataset`) that the toolkit shards as it shards a returned
one:

* the tensors the iterator gave, returned as they are: that Dataset itself;
* tensors made of them (a label popped, a column parsed): that Dataset, mapped by the
  input_fn itself, run again inside the map with an iterator that gives each element.

Tensors that come from no Dataset (placeholders, queues) are left to `inputs`, which says
in one line that they cannot be split among workers.
"""

import contextlib

import tensorflow as tf
from tensorflow.python.data.ops import dataset_ops  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import errors
from estimator_dist import bound_names

_FUNCTIONS = ("make_one_shot_iterator", "make_initializable_iterator")


class _Iterator:
  """An iterator as the input_fn sees it: its get_next() gives `element` (inside the map
  of `as_dataset`), or the real iterator's next element, recorded."""

  def __init__(self, record, real=None, element=None):
    self._record, self._real, self._element = record, real, element

  def get_next(self, *args, **kwargs):  # Its `name`, in a graph.
    got = self._element if self._real is None else self._real.get_next(*args, **kwargs)
    self._record.outputs = got
    return got

  def __getattr__(self, name):  # initializer, output_types, ... of the real one.
    if self._real is None:
      return tf.no_op() if name == "initializer" else None
    return getattr(self._real, name)


class Record:
  """What an input_fn made while `iterating`: the Datasets it made iterators of, and what
  the last get_next() gave."""

  def __init__(self):
    self.datasets, self.outputs = [], None


@contextlib.contextmanager
def iterating(element=None):
  """While entered, an iterator made of a Dataset (`tf.compat.v1.data.make_one_shot_iterator`,
  `make_initializable_iterator`, and the same methods of a v1 Dataset) is recorded, and
  gives `element` when one is given; yields the Record."""
  record = Record()
  originals = {name: getattr(dataset_ops, name) for name in _FUNCTIONS}
  methods = {name: getattr(dataset_ops.DatasetV1, name) for name in _FUNCTIONS}
  bound = {name: bound_names.modules_binding(name, originals[name]) for name in _FUNCTIONS}

  def routed(name):
    def make(dataset, *args, **kwargs):
      record.datasets.append(dataset)
      if element is not None:
        return _Iterator(record, element=element)
      return _Iterator(record, real=originals[name](dataset, *args, **kwargs))
    return make

  try:
    for name in _FUNCTIONS:
      for module in bound[name]:
        setattr(module, name, routed(name))
      setattr(dataset_ops.DatasetV1, name, routed(name))
    yield record
  finally:
    for name in _FUNCTIONS:
      for module in bound[name]:
        setattr(module, name, originals[name])
      setattr(dataset_ops.DatasetV1, name, methods[name])


def as_dataset(result, record, call_input_fn, name):
  """`result` (what an input_fn returned while `iterating`, with `record`) as a Dataset:
  itself when it is one or comes from no iterator; `call_input_fn()` calls the input_fn
  again (inside the map of a result made of an iterator's tensors)."""
  if isinstance(result, tf.data.Dataset) or not record.datasets:
    return result
  if len(record.datasets) > 1:
    raise errors.ConfigError(
        f"input_fn {name} makes iterators of {len(record.datasets)} Datasets; a job shards "
        f"one: zip them into one Dataset, or return the Dataset itself.")
  dataset = record.datasets[0]
  if _same_tensors(result, record.outputs):
    return dataset  # The iterator's elements as they are.
  structured = isinstance(dataset.element_spec, tuple)

  def rerun(*components):
    with iterating(element=components if structured else components[0]):
      return call_input_fn()
  try:
    return dataset.map(rerun)
  except Exception as e:  # pylint: disable=broad-except
    raise errors.ConfigError(
        f"input_fn {name} returns tensors made of its iterator's, and making them inside a "
        f"Dataset's map failed ({type(e).__name__}: {str(e).splitlines()[0][:200]}): move "
        f"that work into a .map() of the Dataset and return the Dataset.") from None


def _same_tensors(result, outputs):
  try:
    tf.nest.assert_same_structure(result, outputs)
  except (ValueError, TypeError):
    return False
  return all(a is b for a, b in zip(tf.nest.flatten(result), tf.nest.flatten(outputs)))


def dataset_of(call_input_fn):
  """What `call_input_fn()` returns, as a Dataset where it makes an iterator of one."""
  with iterating() as record:
    result = call_input_fn()
  return as_dataset(result, record, call_input_fn, "input_fn")

