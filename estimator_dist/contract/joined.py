"""Which tasks joined their job's strategy: the record a task writes when it starts the
job's strategy from its environment, and what the launcher makes of the records.

A job whose tasks all exit 0 may still not have trained together: a program that ignores
the cluster (its own --strategy flag, plain `tf.estimator` calls) trains alone on every
task, or on the chief while the others skip. The launcher names the job's directory
(env_vars.JOB_DIR); each task that starts the strategy writes `joined/<role>:<index>`
there (`write`, called by the strategies' factory), and a job counts as a success only
when every task it expects did (`not_joined`).
"""

import os

from estimator_dist.contract import env_vars
from estimator_dist.contract import whole_file


def write(task, *, strategy, env=os.environ):
  """Records that `task` (a TaskInfo) started `strategy` from its environment, where the
  launcher asked (nowhere without JOB_DIR)."""
  job_dir = env.get(env_vars.JOB_DIR)
  if not job_dir or not os.path.isdir(job_dir):
    return
  os.makedirs(os.path.join(job_dir, "joined"), exist_ok=True)
  whole_file.write_json(os.path.join(job_dir, "joined", f"{task.role}:{task.index}"),
                        {"strategy": strategy, "size": task.size})


def not_joined(job_dir, expected, *, strategy):
  """The names among `expected` that wrote no record of `strategy` in `job_dir`, each
  with why: {name: reason}."""
  found = {}
  for name in sorted(expected):
    try:
      joined = whole_file.read_json(os.path.join(job_dir, "joined", name)).get("strategy")
    except (OSError, ValueError, AttributeError):
      found[name] = "never started the job's strategy"
      continue
    if joined != strategy:
      found[name] = f"started {joined}, not the job's {strategy}"
  return found
