"""The factory: a strategy name and its options to a started adapter."""

import dataclasses
import importlib
import os

from estimator_dist import errors
from estimator_dist.strategies import traits as traits_lib

# name -> (module, class); modules load on demand so Horovod is imported only when used.
_ADAPTERS = {
    "local": ("estimator_dist.strategies.local", "LocalAdapter"),
    "mirrored": ("estimator_dist.strategies.mirrored", "MirroredAdapter"),
    "multi_worker": ("estimator_dist.strategies.multi_worker", "MultiWorkerAdapter"),
    "parameter_server": ("estimator_dist.strategies.parameter_server", "ParameterServerAdapter"),
    "horovod": ("estimator_dist.strategies.horovod", "HorovodAdapter"),
}
assert tuple(_ADAPTERS) == traits_lib.STRATEGIES


def adapter_class(name):
  """The adapter class of strategy `name` (or an alias of it)."""
  module, cls = _ADAPTERS[traits_lib.of(name).name]
  return getattr(importlib.import_module(module), cls)


def options_for(name, **options):
  """The checked options dataclass of strategy `name`, built from keyword options."""
  cls = adapter_class(name).Options
  known = sorted(f.name for f in dataclasses.fields(cls))
  unknown = sorted(set(options) - set(known))
  if unknown:
    raise errors.ConfigError(f"strategy {name!r} does not take option(s) {unknown}; it "
                             f"takes {known}.")
  return cls(**options)


# (TF_CONFIG as started, adapter) of the adapters started from this process's
# environment: a process has one backend, and `run_program` starts it before the program
# builds its model.
_started = []


def create_strategy(name, *, task=None, **options):
  """Returns the started adapter for strategy `name`, configured with `options`.

  `task` (a TaskInfo) overrides the one read from the environment. Create the adapter
  before running any other TensorFlow op: `mirrored` splits the CPU into devices and
  `multi_worker` starts this task's server, both only possible at start. Asked again
  for the same strategy and options, this process's started adapter is returned.
  """
  cls = adapter_class(name)
  options = options_for(name, **options)
  if task is not None:
    return cls(task=task, options=options).start()
  for published, adapter in _started:
    if (type(adapter) is cls and adapter.options == options and
        published == os.environ.get("TF_CONFIG")):
      return adapter
  adapter = cls(options=options).start()
  _started.append((os.environ.get("TF_CONFIG"), adapter))  # As start() published it.
  return adapter
