"""The launcher's MLflow run of the job it starts (--mlflow_tracking_uri).

The launcher is on the network the tracking server is on; its tasks may not be (a local
job's tasks have a network namespace of their own). So the launcher writes the run, and
its tasks never see the tracking variables (VARIABLES). It starts the run once it holds
the model_dir (or writes into the one a sweep made for the trial: env_vars.MLFLOW_RUN_ID
in its own environment), and once the job has ended records it (`outputs.tracking`): FINISHED;
FAILED with the line of the tasks' output that says why (`failure_cause`, the
`estimator_dist.failure` tag) or the launcher's own error; KILLED when it was stopped.
"""

import os

from estimator_dist.contract import env_vars
from estimator_dist.outputs import tracking
from estimator_dist.supervision import failure_cause

VARIABLES = (env_vars.MLFLOW_TRACKING_URI, env_vars.MLFLOW_RUN_ID)


def task_env(env):
  """`env` without what the launcher's tracking reads or set for itself."""
  return {k: v for k, v in env.items() if k not in VARIABLES and k not in tracking.SET_HERE}


def start(uri, *, job, model_dir, log, env=os.environ):
  """The job's LaunchRun (`uri`, else the one in `env`); None without tracking."""
  uri = uri or env.get(env_vars.MLFLOW_TRACKING_URI)
  if not uri:
    return None
  run = tracking.job_run(uri, model_dir=model_dir, log=log, env=env,
                         tags={"estimator_dist.command": " ".join(job.command)})
  return run and LaunchRun(run, model_dir)


class LaunchRun:
  """The run of one job of the launcher."""

  def __init__(self, run, model_dir):
    self._run, self._model_dir = run, model_dir

  def ended(self, code, tasks, error=None, *, summary=None):
    """Records the job that ended with exit `code`, its `tasks` and its `summary` (the
    chief's fields, or None); `error`: what ended the launcher instead (None with no
    code: it was stopped)."""
    failure = None
    if code:
      # Those that failed by themselves first, then those the launcher stopped.
      failed = sorted(tasks, key=lambda t: (t.process.returncode in (0, None),
                                            (t.process.returncode or 0) < 0))
      output = "\n".join(f"[{t.name}] {line}" for t in failed for line in t.tail)
      why = failure_cause.first_error_line(output) or "its output says no more"
      failure = f"exit code {code}: {why}"
    elif code is None and error is not None:
      failure = f"the launcher failed: {type(error).__name__}: {error}"
    tracking.record_job(self._run, self._model_dir, succeeded=code == 0,
                        summary=summary, failure=failure)
