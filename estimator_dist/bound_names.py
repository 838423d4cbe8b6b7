"""Where a function is bound by name: the module that defines it and every loaded module
that bound it when it loaded (TensorFlow's API modules, tf.estimator and
tf.compat.v1.estimator, bind `train_and_evaluate` so). Replacing a function means
replacing it in each of them."""

import sys


def _modules_binding(name, value):
  """The loaded modules whose attribute `name` is `value`."""
  return [module for module in list(sys.modules.values())
          if getattr(module, "__dict__", {}).get(name) is value]


def rebind(name, value, replacement):
  """Binds `replacement` as `name` in every loaded module that binds `value` so; returns
  a function that binds `value` back in them."""
  modules = _modules_binding(name, value)
  for module in modules:
    setattr(module, name, replacement)

  def undo():
    for module in modules:
      setattr(module, name, value)
  return undo
