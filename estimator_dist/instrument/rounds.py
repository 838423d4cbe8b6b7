"""What the tasks of an instrumented program agree on, round by round: the chief decides
(the model_dir and the step of a train() round, the metrics of an evaluate(), the path of
an export) and writes it in the job's directory; every other task waits for it there.

Tasks make the same calls in the same order, so the n-th call of a kind on every task is
one round: `$ESTIMATOR_DIST_JOB_DIR/rounds/<kind>-<n>.json`. The launcher makes that
directory new for each attempt of the job.
"""

import collections
import os
import time

from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import whole_file

_counts = collections.Counter()


def _path(kind, number, env):
  job_dir = env.get(env_vars.JOB_DIR)
  if not job_dir:
    raise errors.ConfigError(f"an instrumented program's tasks agree through the job's "
                             f"directory (${env_vars.JOB_DIR}), which `estimator-dist launch` "
                             f"gives them; run the program through it.")
  return os.path.join(job_dir, "rounds", f"{kind}-{number}.json")


def next_round(kind):
  """The number of this process's next `kind` round (1, 2, ...)."""
  _counts[kind] += 1
  return _counts[kind]


def publish(kind, number, value, env=os.environ):
  """The chief's `value` (JSON) of round `number` of `kind`, written whole."""
  path = _path(kind, number, env)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  whole_file.write_json(path, value)


def wait_for(kind, number, *, poll_secs=0.2, env=os.environ):
  """The chief's value of round `number` of `kind`, once it wrote it. The launcher ends a
  task that waits for a chief that failed (it stops the job) or hangs (its heartbeats)."""
  path = _path(kind, number, env)
  while True:
    try:
      return whole_file.read_json(path)
    except FileNotFoundError:
      time.sleep(poll_secs)
