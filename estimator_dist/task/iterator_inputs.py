"""TF1 input_fns that end in an iterator, distributed as written.

TensorFlow 1 trainers (Cloud ML Engine's samples among them) end their input_fn with
`tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()` (or an initializable
iterator), maybe take the tensors apart (`features.pop("label")`), and return tensors, not
the Dataset. `dataset_of` runs such an input_fn with iterator creation routed: the Dataset
is seen as the iterator is asked for (the input_fn goes no further), and the input_fn
runs again inside that Dataset's `map`, with an iterator whose `get_next()` gives each
element, so that what it makes of the element becomes the Dataset's elements. An
input_fn that returns the element as it is gets the Dataset itself. Either way the
toolkit shards the result as it shards a returned Dataset; no iterator is ever made.

Tensors that come from no Dataset (placeholders, queues) are left to `inputs`, which says
in one line that they cannot be split among workers.
"""

import contextlib
import threading
import weakref

import tensorflow as tf
from tensorflow.python.data.ops import dataset_ops  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import bound_names
from estimator_dist import errors

_FUNCTIONS = ("make_one_shot_iterator", "make_initializable_iterator")
_REMADE = weakref.WeakSet()  # The Datasets whose elements the input_fn remade in a map.


class _Seen(BaseException):  # Not an Exception: a program's `except Exception` passes it.
  def __init__(self, dataset):
    super().__init__()
    self.dataset = dataset


class _Iterator:
  """The iterator the input_fn gets inside the map: its get_next() gives the element."""

  def __init__(self, element):
    self._element = element
    self.initializer = tf.no_op()  # An initializable one's, which a hook of its own runs.

  def get_next(self, *args, **kwargs):  # Its `name`, in a graph.
    del args, kwargs
    return self._element


_ROUTING = threading.RLock()  # One routing at a time: each restores what it replaced.


@contextlib.contextmanager
def _routed(make):
  """While entered, `make(dataset)` gives every iterator this thread makes of a Dataset
  (`tf.compat.v1.data.make_one_shot_iterator`, `make_initializable_iterator`, and the same
  methods of a v1 Dataset). Other threads make theirs as TensorFlow does: a strategy's
  own input pipelines (parameter_server's client trains its workers in threads) make
  iterators at the same time."""
  with _ROUTING:
    owner = threading.get_ident()
    originals = {name: getattr(dataset_ops, name) for name in _FUNCTIONS}
    methods = {name: getattr(dataset_ops.DatasetV1, name) for name in _FUNCTIONS}

    def routed(original):
      def make_iterator(dataset, *args, **kwargs):
        if threading.get_ident() != owner:
          return original(dataset, *args, **kwargs)
        return make(dataset)  # shared_name: no iterator is made.
      return make_iterator
    unbind = []
    try:
      for name in _FUNCTIONS:
        unbind.append(bound_names.rebind(name, originals[name], routed(originals[name])))
        setattr(dataset_ops.DatasetV1, name, routed(methods[name]))
      yield
    finally:
      for undo in unbind:
        undo()
      for name in _FUNCTIONS:
        setattr(dataset_ops.DatasetV1, name, methods[name])


def _seen(dataset):
  raise _Seen(dataset)


def dataset_of(call_input_fn):
  """What `call_input_fn()` returns, as the Dataset it iterates where it makes an iterator
  of one (see the module doc); as it is otherwise."""
  try:
    with _routed(_seen):
      return call_input_fn()
  except _Seen as seen:
    dataset = seen.dataset
  structured = isinstance(dataset.element_spec, tuple)
  made, unchanged = [], []

  def rerun(*components):
    element = components if structured else components[0]
    before = tf.nest.map_structure(lambda t: t, element)  # Its own containers: a pop
    with _routed(lambda d: made.append(d) or _Iterator(element)):  # cannot change them.
      result = call_input_fn()
    unchanged.append(_same_tensors(result, before))
    return result
  try:
    mapped = dataset.map(rerun)  # Traced now, once.
  except Exception as e:  # pylint: disable=broad-except
    raise errors.ConfigError(
        f"the input_fn returns tensors made of its iterator's, and making them inside a "
        f"Dataset's map failed ({type(e).__name__}: {str(e).splitlines()[0][:200]}): move "
        f"that work into a .map() of the Dataset and return the Dataset.") from None
  if len(made) > 1:
    raise errors.ConfigError(
        f"the input_fn makes iterators of {len(made)} Datasets; a job shards one: zip them "
        f"into one Dataset, or return the Dataset itself.")
  if all(unchanged):
    return dataset
  _REMADE.add(mapped)
  return mapped


def remade(dataset):
  """Whether `dataset` is one `dataset_of` made by running the input_fn again inside a
  map. The readers the input_fn makes there sit inside a function, where tf.data's FILE
  sharding does not look: it shards the elements instead, so the input is read by batch."""
  return dataset in _REMADE


def _same_tensors(result, element):
  try:
    tf.nest.assert_same_structure(result, element)
  except (ValueError, TypeError):
    return False
  return all(a is b for a, b in zip(tf.nest.flatten(result), tf.nest.flatten(element)))
