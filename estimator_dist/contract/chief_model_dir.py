"""The model_dir the chief trains in, which the launcher learns: a program that names its
own (its RunConfig, its --job-dir) trains there, not in the directory the launcher made or
was given. The chief writes `model_dir` in the job's directory (env_vars.JOB_DIR) when its
run starts; the launcher follows it for progress, restarts and curves."""

import os

from estimator_dist.contract import env_vars
from estimator_dist.contract import whole_file

_FILE = "model_dir"


def write(model_dir, *, env=os.environ):
  """Records the chief's `model_dir` where the launcher asked (nowhere without JOB_DIR)."""
  job_dir = env.get(env_vars.JOB_DIR)
  if job_dir and os.path.isdir(job_dir):
    whole_file.write_json(os.path.join(job_dir, _FILE), {"model_dir": model_dir})


def read(job_dir):
  """The chief's model_dir recorded in `job_dir`; None before the chief wrote one."""
  if not job_dir:
    return None
  try:
    return whole_file.read_json(os.path.join(job_dir, _FILE))["model_dir"]
  except (OSError, ValueError, KeyError, TypeError):
    return None
