"""What the tasks of an instrumented program agree on, round by round: the chief decides
(the step a train() round starts from, the metrics of an evaluate(), the path of an
export) and writes it in the model_dir; every other task waits for it and reads it.

Tasks make the same calls in the same order, so the n-th call of a kind on every task is
one round: `model_dir/estimator_dist/rounds/<kind>-<n>.json`. A file older than this
process is an earlier job's, and is waited past.
"""

import collections
import json
import os
import time

from estimator_dist.instrument import started

_counts = collections.Counter()


def _path(model_dir, kind, number):
  return os.path.join(model_dir, "estimator_dist", "rounds", f"{kind}-{number}.json")


def next_round(kind):
  """The number of this process's next `kind` round (1, 2, ...)."""
  _counts[kind] += 1
  return _counts[kind]


def publish(model_dir, kind, number, value):
  """The chief's `value` (JSON) of round `number` of `kind`, written whole."""
  path = _path(model_dir, kind, number)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  partial = f"{path}.{os.getpid()}.partial"
  with open(partial, "w") as f:
    json.dump(value, f)
  os.replace(partial, path)


def wait_for(model_dir, kind, number, *, poll_secs=0.2):
  """The chief's value of round `number` of `kind`, once it wrote it in this job. The
  launcher's watchdog and hang detection end a task that waits for a chief that died."""
  path = _path(model_dir, kind, number)
  while True:
    try:
      if os.path.getmtime(path) >= started.STARTED - 1.0:
        with open(path) as f:
          return json.load(f)
    except (OSError, ValueError):
      pass
    time.sleep(poll_secs)
