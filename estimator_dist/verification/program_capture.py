"""The model and the training input of a program that never imports estimator_dist, as
`estimator-dist verify -- python PROGRAM` takes them.

The program runs as `python` would run it (`python -m module args` or `python file args`)
until its first training call, `Estimator.train()` or `tf.estimator.train_and_evaluate()`;
that call ends it and gives the Estimator and the training input_fn it was called with.
"""

import functools
import inspect
import os
import runpy
import sys

import tensorflow as tf
from absl import flags
from tensorflow_estimator.python.estimator import estimator as estimator_lib
from tensorflow_estimator.python.estimator import training as training_lib

from estimator_dist import bound_names
from estimator_dist import errors
from estimator_dist.task import array_inputs
from estimator_dist.task import iterator_inputs


class _Captured(BaseException):  # Not an Exception: a program's `except Exception` passes it.
  def __init__(self, estimator, input_fn):
    super().__init__()
    self.estimator, self.input_fn = estimator, input_fn


def _train(estimator, input_fn, *args, **kwargs):
  del args, kwargs
  raise _Captured(estimator, input_fn)


def _train_and_evaluate(estimator, train_spec, eval_spec):
  del eval_spec
  raise _Captured(estimator, train_spec.input_fn)


def captured(command, *, our_flags=()):
  """(Estimator, input_fn) of the first training call of `command`, a Python program's
  command line (its interpreter first). The absl flags named `our_flags` (verify's, read
  already) are removed first: the program defines its own, whatever their names
  (`--model_dir`, `--train_steps`), as it does when it runs alone."""
  script, args, run = _runner(command)
  for name in our_flags:
    if name in flags.FLAGS:
      delattr(flags.FLAGS, name)
  original = training_lib.train_and_evaluate, estimator_lib.Estimator.train
  argv = sys.argv
  sys.argv = [script, *args]
  estimator_lib.Estimator.train = _train
  unbind = bound_names.rebind("train_and_evaluate", original[0], _train_and_evaluate)
  try:
    run()
  except _Captured as taken:
    return taken.estimator, taken.input_fn
  finally:
    sys.argv = argv
    estimator_lib.Estimator.train = original[1]
    unbind()
  raise errors.ConfigError(f"{' '.join(command)} ended without training: verify takes the "
                           f"Estimator and the input_fn of its first Estimator.train() or "
                           f"tf.estimator.train_and_evaluate() call.")


def _runner(command):
  """(sys.argv[0], the arguments, a function that runs it as __main__)."""
  words = list(command)
  if len(words) >= 3 and words[1] == "-m":
    name = words[2]
    return name, words[3:], functools.partial(runpy.run_module, name, run_name="__main__",
                                              alter_sys=True)
  if len(words) >= 2 and words[1].endswith(".py"):
    path = os.path.abspath(words[1])
    sys.path.insert(0, os.path.dirname(path))  # As python puts the script's directory first.
    return path, words[2:], functools.partial(runpy.run_path, path, run_name="__main__")
  raise errors.ConfigError(f"verify runs a Python program: `-- python -m module ...` or "
                           f"`-- python file.py ...`, got {' '.join(words) or 'nothing'}.")


def joined_batches(input_fn, count):
  """`input_fn` whose batches are `count` consecutive batches of its own, joined into one:
  one worker's step at the global batch of `count` workers, which take the batches in
  turn (the toolkit deals a pipeline's batches by turn)."""

  def flat(tensor):
    rest = tensor.shape[2:]
    shape = [-1, *rest] if rest.is_fully_defined() else tf.concat(
        [[-1], tf.shape(tensor)[2:]], 0)
    return tf.reshape(tensor, shape)

  if array_inputs.made_by(input_fn):  # A numpy_input_fn's or pandas_input_fn's examples.
    input_fn = array_inputs.as_dataset_input_fn(input_fn)

  def joined(**kwargs):
    # A TF1 input_fn's iterator tensors are read as the Dataset they iterate.
    dataset = iterator_inputs.dataset_of(lambda: input_fn(**kwargs))
    return dataset.batch(count, drop_remainder=True).map(
        lambda *parts: tf.nest.map_structure(flat, parts if len(parts) > 1 else parts[0]))
  # Estimator passes the arguments the program's takes (its `mode`, say), read from here.
  joined.__name__ = getattr(input_fn, "__name__", "input_fn")
  joined.__signature__ = inspect.signature(input_fn)
  return joined
