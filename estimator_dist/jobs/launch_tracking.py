"""The launcher's MLflow run of the job it starts (--mlflow_tracking_uri).

The launcher is on the network the tracking server is on; its tasks may not be (a local
job's tasks have a network namespace of their own). So the launcher writes the run, and
its tasks never see the tracking variables. It starts the run before the tasks (or
writes into the one a sweep made for the trial: env_vars.MLFLOW_RUN_ID in its own
environment), and once the job has ended records it (`task.tracking.record_job`) with
its summary. The run ends FINISHED; FAILED with the line of the tasks' output that says
why (`failure_cause`, the `estimator_dist.failure` tag); KILLED when the launcher was
stopped.
"""

import os

from estimator_dist.jobs import failure_cause
from estimator_dist.task import env_vars
from estimator_dist.task import tracking

VARIABLES = (env_vars.MLFLOW_TRACKING_URI, env_vars.MLFLOW_RUN_ID)  # Not for the tasks.


def start(uri, *, job, model_dir, log, env=os.environ):
  """The job's LaunchRun (`uri`, else the one in `env`); None without tracking."""
  uri = uri or env.get(env_vars.MLFLOW_TRACKING_URI)
  if not uri:
    return None
  run = tracking.Run.start(uri, warn=log, run_id=env.get(env_vars.MLFLOW_RUN_ID),
                           name=os.path.basename(os.path.normpath(model_dir)),
                           tags={"estimator_dist.model_dir": model_dir,
                                 "estimator_dist.command": " ".join(job.program)})
  if run is None:
    return None
  log(f"tracked in MLflow at {uri}, run {run.run_id}")
  return LaunchRun(run, model_dir)


class LaunchRun:
  """The run of one job of the launcher."""

  def __init__(self, run, model_dir):
    self._run, self._model_dir = run, model_dir

  def ended(self, code, tasks):
    """Records the job that ended with exit `code` (None: stopped) and its `tasks`."""
    summaries = [fields for task in tasks for fields in task.summaries]
    tracking.record_job(self._run, self._model_dir, summary=summaries[0] if summaries else None)
    if code:
      output = "\n".join(line for task in tasks for line in task.tail)
      why = failure_cause.first_error_line(output) or "its output says no more"
      self._run.set_tags({"estimator_dist.failure": f"exit code {code}: {why}"})
    self._run.end("FINISHED" if code == 0 else "KILLED" if code is None else "FAILED")
