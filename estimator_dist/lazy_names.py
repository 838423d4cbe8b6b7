"""Names a package re-exports, each imported from its module when first used (PEP 562).

A package's `__init__` lists {name: module} and gets its `__getattr__` and `__dir__`
here, so importing the package imports none of the modules: a process that only starts
jobs never imports TensorFlow, Optuna or matplotlib.
"""

import importlib

from estimator_dist import extras


def exports(package, names, *, check=None, unchecked=()):
  """(__getattr__, __dir__) for `package`, re-exporting `names` ({name: module});
  `check()`, if given, runs before a name's module is imported (and raises what is
  missing), unless the name is one of `unchecked`."""

  def getattr_(name):
    if name not in names:
      raise AttributeError(f"module {package!r} has no attribute {name!r}")
    if check is not None and name not in unchecked:
      check()
    try:
      module = importlib.import_module(names[name])
    except ModuleNotFoundError as e:  # Optuna for `sweep`: name the extra that has it.
      missing = extras.missing_extra(e, f"{package}.{name}")
      if missing is None:
        raise
      raise missing from e
    value = getattr(module, name)
    setattr(importlib.import_module(package), name, value)  # Found directly from now on.
    return value

  def dir_():
    return sorted(set(vars(importlib.import_module(package))) | set(names))

  return getattr_, dir_
