"""`numpy_input_fn` and `pandas_input_fn` read as tf.data, so that workers can split them.

tf.estimator's numpy_input_fn and pandas_input_fn feed queues: their input_fn returns
(features, labels) tensors that no worker can take a share of, and tf.distribute
strategies take only a Dataset. The arrays they were given are still in the input_fn's
closure, before they become tensors. For training, the input_fn becomes a Dataset of the
same examples in batches of the same size, shuffled when it shuffled (under the job's one
graph seed, so in the same order on every worker), which the toolkit then splits by batch
like any Dataset: each example once per epoch.
"""

import tensorflow as tf
from tensorflow_estimator.python.estimator.inputs import numpy_io
from tensorflow_estimator.python.estimator.inputs import pandas_io

_MADE_BY = {(numpy_io.__name__, "numpy_input_fn.<locals>.input_fn"): "numpy_input_fn",
            (pandas_io.__name__, "pandas_input_fn.<locals>.input_fn"): "pandas_input_fn"}


def made_by(input_fn):
  """"numpy_input_fn" or "pandas_input_fn" when `input_fn` is one they made, else None."""
  return _MADE_BY.get((getattr(input_fn, "__module__", None),
                       getattr(input_fn, "__qualname__", None)))


def as_dataset_input_fn(input_fn):
  """The tf.data input_fn with the examples of a numpy_input_fn or pandas_input_fn."""
  maker = made_by(input_fn)
  cells = _closure(input_fn)
  examples = _numpy_examples(cells) if maker == "numpy_input_fn" else _pandas_examples(cells)
  count = len(tf.nest.flatten(examples)[0])

  def dataset_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(examples)
    if cells["shuffle"]:
      dataset = dataset.shuffle(count)
    return dataset.batch(cells["batch_size"])
  dataset_input_fn.__name__ = f"{maker} of {count} examples"
  return dataset_input_fn


def _closure(function):
  """The values `function` closes over, by name (the arguments its maker was given)."""
  values = {}
  for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
    try:
      values[name] = cell.cell_contents
    except ValueError:  # Never assigned (pandas_input_fn's y_columns without a frame y).
      pass
  return values


def _numpy_examples(cells):
  """(features, labels), or the features alone, as numpy_input_fn returns them."""
  x, y = cells["x"], cells["y"]
  features = dict(x) if isinstance(x, dict) else x
  if y is None:
    return features
  return features, dict(y) if isinstance(y, dict) else y


def _pandas_examples(cells):
  """pandas_input_fn's frame holds the features and, appended, the target column(s)."""
  frame, y = cells["x"], cells["y"]
  if y is None:
    return {name: frame[name].values for name in frame.columns}
  targets = cells["target_column"]
  if isinstance(targets, list):  # A DataFrame y: its columns under unique names.
    labels = {name: frame[column].values
              for (name, _), column in zip(cells["y_columns"], targets)}
  else:
    targets, labels = [targets], frame[targets].values
  features = {name: frame[name].values for name in frame.columns if name not in targets}
  return features, labels
