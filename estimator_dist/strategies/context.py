"""The active adapter: which strategy the model_fn being built on this thread trains under.

Kept apart, as tf.distribute keeps its strategy context, so that the decorator can ask
for it without importing the adapters.
"""

import contextlib
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

