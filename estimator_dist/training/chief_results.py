"""What the chief's call returned, on every training task: the chief posts it in the job's
mailbox as the next round of its kind (contract/rounds.py), and every other training task
waits for it there, so that a program gets on each task what it gets on one machine:
train_and_evaluate's metrics and exports, evaluate()'s metrics, export_saved_model()'s
path. A task waits as long as the chief takes: the engine ends it when the chief fails,
or when it waits longer than the job's hang checks allow.
"""

import numpy as np

from estimator_dist.contract import rounds


def shared(kind, *, task, on_chief, encode=lambda value: value,
           decode=lambda value: value):
  """On the chief, `on_chief()`, posted (as `encode` makes it JSON) as the next round of
  `kind`; on another task (`task`: this one's TaskInfo), the chief's value of that round
  (as `decode` reads it back)."""
  number = rounds.next_round(kind, task)
  if not task.is_chief:
    return decode(rounds.wait_for(kind, number))
  value = on_chief()
  rounds.publish(kind, number, encode(value))
  return value


def encode_metrics(metrics):
  """Evaluation metrics (numpy scalars, as Estimator returns them) as JSON."""
  return {key: (np.asarray(value).tolist(), str(np.asarray(value).dtype))
          for key, value in metrics.items()}


def decode_metrics(value):
  """The metrics `encode_metrics` gave: numpy scalars of their dtypes again."""
  return {key: np.asarray(number, dtype)[()] for key, (number, dtype) in value.items()}


def encode_exports(exports):
  """What the exporters returned (export paths, as bytes) as JSON."""
  return [path.decode() if isinstance(path, bytes) else
          path if path is None or isinstance(path, (str, int, float)) else str(path)
          for path in exports]


def decode_exports(value):
  return [path.encode() if isinstance(path, str) else path for path in value]
