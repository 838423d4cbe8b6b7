"""A sweep in MLflow: a parent run, and in it a nested run for each trial, which the
trial's job writes into.

The parent run is named after the sweep dir and its id kept in the study, so a sweep run
again (after a kill, or by another runner) writes into the same one; `--engine=slurm`
makes it before it prints the array, whose runners then share it. Its parameters are
the space, sampler, pruner, metric and trials' shape; at the end it gets the best value
and the trials counted by state. Each trial's run is made when the trial starts and
passed to its job (env_vars.MLFLOW_RUN_ID), which records itself in it (the trial's
launcher; on Spark, its chief); the sweep tags it with the trial's number and, once the
trial ended, `estimator_dist.state` (complete, pruned, diverged or failed). Like the jobs', a
server that cannot be reached is warned about once, and the trials that start after
that are not tracked (`outputs.tracking`).
"""

import collections
import os

from estimator_dist.contract import task_env
from estimator_dist.outputs import tracking

_RUN_ID = "mlflow_run_id"  # A study's and a trial's user attribute.


class SweepRun:
  """The sweep's parent run and its trials' runs."""

  def __init__(self, run, *, uri):
    self._run, self._uri = run, uri
    self._trials = {}  # trial number: its Run

  @classmethod
  def start(cls, study, options, *, warn):
    """The sweep's run (made, or found again in the study); None without tracking."""
    uri = options.mlflow_tracking_uri
    if not uri:
      return None
    run_id = study.user_attrs.get(_RUN_ID)
    run = tracking.Run.start(uri, warn=warn, run_id=run_id,
                             name=os.path.basename(os.path.abspath(options.sweep_dir)),
                             tags={"estimator_dist.sweep_dir": options.sweep_dir})
    if run is None:
      return None
    if run_id is None:
      study.set_user_attr(_RUN_ID, run.run_id)
      run.log_params({"space": options.space, "sampler": options.sampler,
                      "pruner": options.pruner, "scheduler": options.scheduler,
                      "metric": options.metric,
                      "direction": options.direction, "strategy": options.strategy,
                      "workers_per_trial": options.workers_per_trial,
                      "trials": options.trial_count})
    return cls(run, uri=uri)

  def trial_env(self, trial):
    """The variables that make `trial`'s job write into a new run nested in the sweep's
    (none once the server failed)."""
    child = self._run.child(f"trial_{trial.number}", {"estimator_dist.trial": trial.number})
    if child is None:
      return {}
    self._trials[trial.number] = child
    trial.set_user_attr(_RUN_ID, child.run_id)
    return task_env.task_environment(mlflow_tracking_uri=self._uri,
                                     mlflow_run_id=child.run_id)

  def trial_ended(self, trial, state):
    """Tags the trial's run with how it ended; a failed job's run ends FAILED."""
    child = self._trials.pop(trial.number, None)
    if child:
      child.set_tags({"estimator_dist.state": state})
      if state == "failed":  # Its job may not have got to say so.
        child.end("FAILED")

  def finished(self, report, *, error=None):
    """Logs the sweep's outcome; ends its run FINISHED, or FAILED with `error`."""
    states = collections.Counter(row["state"] for row in report["trials"]) if report else {}
    points = [(f"trials_{state}", count, 0) for state, count in states.items()]
    if report and report["best"]:
      points.append((f"best_{report['metric']}", report["best"]["value"], 0))
      self._run.set_tags({"estimator_dist.best_trial": report["best"]["number"]})
    self._run.log_metrics(points)
    if error is not None:
      self._run.set_tags({"estimator_dist.failure": f"{type(error).__name__}: {error}"})
    self._run.end("FAILED" if error is not None else "FINISHED")
