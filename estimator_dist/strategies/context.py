"""The active adapters: which strategy the model_fn being built on this thread trains under,
and the one adapter this process started.

Kept apart, as tf.distribute keeps its strategy context, so that the decorator can ask
for it without importing the adapters.
"""

import contextlib
import os
import threading

_ACTIVE = threading.local()


def current_adapter():
  """The adapter whose model_fn is being built on this thread (None outside one)."""
  return getattr(_ACTIVE, "adapter", None)


@contextlib.contextmanager
def active(adapter):
  """Makes `adapter` the current one while the block runs."""
  previous, _ACTIVE.adapter = current_adapter(), adapter
  try:
    yield
  finally:
    _ACTIVE.adapter = previous


# The adapter this process started from its environment, with TF_CONFIG as that start
# published it: a process has one backend, which `run_program` starts before the program
# builds its model, and `create_strategy` hands out again.
_PROCESS = None


def process_adapter():
  """The adapter started in this process from its environment; None if none was, or if
  TF_CONFIG has changed since (a new task description wants a new adapter)."""
  if _PROCESS is None or _PROCESS[0] != os.environ.get("TF_CONFIG"):
    return None
  return _PROCESS[1]


def started_in_process(adapter):
  """Called by `start()` once `adapter` started from this process's environment."""
  global _PROCESS
  _PROCESS = (os.environ.get("TF_CONFIG"), adapter)
