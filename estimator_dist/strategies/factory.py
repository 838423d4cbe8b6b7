"""The factory: a strategy name and its options to a started adapter."""

import dataclasses
import importlib

from estimator_dist import errors
from estimator_dist.strategies import context
from estimator_dist.strategies import traits as traits_lib


def adapter_class(name):
  """The adapter class of strategy `name` (or an alias of it), its module loaded now."""
  module, cls = traits_lib.of(name).adapter
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
  started = context.process_adapter()
  if type(started) is cls and started.options == options:
    return started
  return cls(options=options).start()
