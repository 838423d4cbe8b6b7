"""Whether a `TrainingRun` runs in this process: the Estimator calls it makes are its own,
which an instrumented program's patches (estimator_dist/instrument) pass through."""

import contextlib

_depth = 0


def running() -> bool:
  return _depth > 0


@contextlib.contextmanager
def entered():
  """While a run trains, evaluates or exports."""
  global _depth
  _depth += 1
  try:
    yield
  finally:
    _depth -= 1
