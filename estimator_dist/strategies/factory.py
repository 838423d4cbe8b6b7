"""The factory: a strategy name and its options to an adapter, and the one this process
started.

A process has one backend: TensorFlow starts a collective server or splits the CPU once,
and Horovod initializes once. The factory records the adapter it started from the
process's environment, and hands it out again when the same strategy and options are asked
for (by `run_program`, which starts it before the program builds its model, and then by the
program's `train_and_evaluate`).
"""

import dataclasses
import importlib

from estimator_dist import errors
from estimator_dist.contract import joined
from estimator_dist.strategies import traits as traits_lib

_started = None  # The adapter started from this process's environment.


def adapter_class(name):
  """The adapter class of strategy `name` (or an alias of it), its module loaded now."""
  return _loaded(traits_lib.of(name).adapter)


def options_class(name):
  """The options dataclass of strategy `name` (or an alias of it), its adapter's
  `Options`; its module imports no TensorFlow, nor the adapter."""
  return _loaded(traits_lib.of(name).options)


def _loaded(where):
  module, name = where
  return getattr(importlib.import_module(module), name)


def options_for(name, **options):
  """The checked options dataclass of strategy `name`, built from keyword options."""
  cls = options_class(name)
  known = sorted(f.name for f in dataclasses.fields(cls))
  unknown = sorted(set(options) - set(known))
  if unknown:
    raise errors.ConfigError(f"strategy {name!r} does not take option(s) {unknown}; it "
                             f"takes {known}.")
  return cls(**options)


def adapter_for(name, options):
  """The adapter of strategy `name` with checked `options`, not started: this process's
  started one when it is the same, else a new one."""
  cls = adapter_class(name)
  if type(_started) is cls and _started.options == options:
    return _started
  return cls(options=options)


def started():
  """The adapter this process started from its environment; None if none."""
  return _started


def start(adapter):
  """Starts `adapter` (reading its task from the environment when it has none) and, when
  it read the environment, records it as this process's and tells the launcher this task
  joined its job (`joined`); returns it."""
  global _started
  from_environment = adapter.task is None
  adapter.start()
  if from_environment and _started is not adapter:
    _started = adapter
    joined.write(adapter.task, strategy=adapter.name)
  return adapter


def create_strategy(name, *, task=None, **options):
  """Returns the started adapter for strategy `name`, configured with `options`.

  `task` (a TaskInfo) overrides the one read from the environment. Create the adapter
  before running any other TensorFlow op: `mirrored` splits the CPU into devices and
  `multi_worker` starts this task's server, both only possible at start. Asked again
  for the same strategy and options, this process's started adapter is returned.
  """
  checked = options_for(name, **options)
  if task is not None:
    return adapter_class(name)(task=task, options=checked).start()
  return start(adapter_for(name, checked))
