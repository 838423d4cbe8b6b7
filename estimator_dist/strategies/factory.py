"""The factory: a strategy name to its adapter."""

import importlib
import inspect

from estimator_dist import errors

# name -> (module, class); modules load on demand so Horovod is imported only when used.
_ADAPTERS = {
    "local": ("estimator_dist.strategies.base", "LocalAdapter"),
    "mirrored": ("estimator_dist.strategies.mirrored", "MirroredAdapter"),
    "multi_worker": ("estimator_dist.strategies.multi_worker", "MultiWorkerAdapter"),
    "parameter_server": ("estimator_dist.strategies.parameter_server", "ParameterServerAdapter"),
    "horovod": ("estimator_dist.strategies.horovod", "HorovodAdapter"),
}
ALIASES = {"collective_all_reduce": "multi_worker"}
STRATEGIES = tuple(_ADAPTERS)


def adapter_class(name):
  key = ALIASES.get(name, name)
  if key not in _ADAPTERS:
    raise errors.ConfigError(
        f"strategy ({name!r}) is not one of {', '.join(STRATEGIES + tuple(ALIASES))}. "
        f"Pick one, for example --strategy=multi_worker.")
  module, cls = _ADAPTERS[key]
  return getattr(importlib.import_module(module), cls)


def option_names(name):
  """The keyword options the adapter of `name` takes."""
  names = set()
  for cls in inspect.getmro(adapter_class(name))[:-1]:  # not object
    if "__init__" in vars(cls):
      names.update(p for p in inspect.signature(cls.__init__).parameters
                   if p not in ("self", "task", "options"))
  return names


def create_strategy(name, **options):
  """Returns the adapter for strategy `name`, configured with `options`.

  Create it before running any other TensorFlow op: `mirrored` splits the CPU into
  devices and `multi_worker` starts this task's server, both only possible at start.
  """
  cls = adapter_class(name)
  unknown = sorted(set(options) - option_names(name) - {"task"})
  if unknown:
    raise errors.ConfigError(f"strategy {name!r} does not take option(s) {unknown}; it "
                             f"takes {sorted(option_names(name))}.")
  return cls(**options)
