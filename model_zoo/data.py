"""Data for the model zoo: scikit-learn digits, a Keras-format MNIST .npz, or synthetic.

Loading uses numpy only (no TensorFlow op runs before the strategy is created).
`train_from_flags` is the main of the model programs.
"""

import importlib.util
import os

import numpy as np
import tensorflow as tf
from absl import flags

import estimator_dist as ed

EVAL_FRACTION = 0.2


def define_flags():
  flags.DEFINE_string("data_path", None,
                      "A Keras-format MNIST .npz (x_train, y_train, x_test, y_test); "
                      "default: scikit-learn's digits.")
  flags.DEFINE_bool("synthetic", False, "Random images and labels (for speed tests).")
  flags.DEFINE_integer("synthetic_examples", 2048, "Examples in the synthetic set.",
                       lower_bound=1)


def _digits():
  x, y = _digits_as_shipped()
  x = x.reshape(-1, 8, 8).astype(np.float32) / 16.0
  y = y.astype(np.int32)
  order = np.random.RandomState(0).permutation(len(y))
  x, y = x[order], y[order]
  split = int(len(y) * (1 - EVAL_FRACTION))
  return (x[:split], y[:split]), (x[split:], y[split:])


def _digits_as_shipped():
  """(pixels, labels) of scikit-learn's digits, read from the file scikit-learn ships (as
  its load_digits does) without importing scikit-learn, which would add half a second of
  start-up to every task of a job."""
  spec = importlib.util.find_spec("sklearn")
  path = spec and os.path.join(os.path.dirname(spec.origin), "datasets", "data",
                               "digits.csv.gz")
  if not path or not os.path.exists(path):  # Another layout: ask scikit-learn itself.
    from sklearn.datasets import load_digits  # pylint: disable=g-import-not-at-top
    digits = load_digits()
    return digits.data, digits.target
  table = np.loadtxt(path, delimiter=",")
  return table[:, :-1], table[:, -1]


def _npz(path):
  try:
    with np.load(path) as f:
      train = (f["x_train"].astype(np.float32) / 255.0, f["y_train"].astype(np.int32))
      test = (f["x_test"].astype(np.float32) / 255.0, f["y_test"].astype(np.int32))
  except (OSError, KeyError, ValueError) as e:
    raise ed.ConfigError(f"--data_path={path} is not a Keras-format MNIST .npz with x_train, "
                     f"y_train, x_test and y_test ({e}).") from None
  return train, test


def _synthetic(n, shape):
  rng = np.random.RandomState(0)
  x = rng.rand(n, *shape).astype(np.float32)
  y = rng.randint(0, 10, size=n).astype(np.int32)
  split = int(n * (1 - EVAL_FRACTION))
  return (x[:split], y[:split]), (x[split:], y[split:])


def _bilinear(size_in, size_out):
  """The (size_out, size_in) matrix of linear interpolation between pixel centres."""
  position = np.clip((np.arange(size_out) + 0.5) * size_in / size_out - 0.5, 0, size_in - 1)
  low = np.floor(position).astype(int)
  high = np.minimum(low + 1, size_in - 1)
  weights = np.zeros((size_out, size_in), np.float32)
  weights[np.arange(size_out), low] += 1 - (position - low)
  weights[np.arange(size_out), high] += position - low
  return weights


def upsample(images, size):
  """Square images to size x size: bilinear to (size - 4)^2, then a 2-pixel border.

  For the 8x8 digits at 28x28 this gives MNIST-like smooth strokes; blocky (nearest)
  upsampling would make exact ties in every max-pool window, whose gradient then
  depends on rounding.
  """
  if images.shape[1:] == (size, size):
    return images
  m = _bilinear(images.shape[1], size - 4)
  big = np.einsum("ij,njk,lk->nil", m, images, m).astype(np.float32)
  return np.pad(np.clip(big, 0.0, 1.0), ((0, 0), (2, 2), (2, 2)))


def load(data_path=None, synthetic=False, synthetic_examples=2048, image_size=None):
  """((x_train, y_train), (x_eval, y_eval)); images resized to image_size x image_size."""
  if synthetic:
    shape = (image_size, image_size) if image_size else (8, 8)
    return _synthetic(synthetic_examples, shape)
  train, test = _npz(data_path) if data_path else _digits()
  if image_size:
    train = (upsample(train[0], image_size), train[1])
    test = (upsample(test[0], image_size), test[1])
  return train, test


def load_from_flags(image_size=None):
  f = flags.FLAGS
  return load(f.data_path, f.synthetic, f.synthetic_examples, image_size)


def digits_input_fn(image_size=None):
  """The training input_fn(params) on scikit-learn's digits (what `estimator-dist verify` runs)."""
  def fn(params):
    (x, y), _ = load(image_size=image_size)
    return input_fn(x, y, shuffle=True)(params)
  return fn


def train_from_flags(model_fn, image_size=None, **params):
  """A model program's main: trains `model_fn` on the flags' data and evaluates it."""
  options = ed.options_from_flags()
  (x_train, y_train), (x_eval, y_eval) = load_from_flags(image_size)
  ed.train_and_evaluate(model_fn, input_fn(x_train, y_train, shuffle=True),
                        input_fn(x_eval, y_eval, shuffle=False),
                        params={"batch_size": options.batch_size, **params},
                        serving_input_receiver_fn=serving_input_fn(x_train.shape[1:]),
                        options=options)


def serving_input_fn(image_shape):
  """What the exported model takes: a float batch of images, named "images"."""
  def fn():
    images = tf.compat.v1.placeholder(tf.float32, [None, *image_shape], name="images")
    return tf.estimator.export.TensorServingInputReceiver(images, {"images": images})
  return fn


def input_fn(x, y, shuffle, key=None):
  """A single-machine input_fn over in-memory arrays, batched by params["batch_size"];
  the features are `{key: x}` when a key is given (canned and Keras Estimators).

  The shuffle has a fixed seed, so every run and every worker sees one order.
  """
  def fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(({key: x} if key else x, y))
    if shuffle:
      dataset = dataset.shuffle(len(y), seed=params.get("shuffle_seed", 0))
    return dataset.batch(params["batch_size"])
  return fn
