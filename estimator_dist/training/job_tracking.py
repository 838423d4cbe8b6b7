"""The chief's part in tracking: the job's parameters, and its MLflow run where it writes one.

The chief writes the job's parameters into model_dir/estimator_dist/params.json (the
program's flags and estimator_dist's, strategy, workers, global batch, train steps), for
whoever records the run (`task.tracking`). Where an engine started the job with
env_vars.MLFLOW_TRACKING_URI set (SLURM, Kubernetes, Spark; the launcher records its jobs
itself), the chief also writes the run: it starts it before training (or writes into the
one a sweep made for the trial: env_vars.MLFLOW_RUN_ID), records the job when it ends and
ends the run FINISHED, or FAILED with the reason (the `estimator_dist.failure` tag).
"""

import json
import os
import sys

import tensorflow as tf
from absl import flags
from absl import logging

from estimator_dist.task import env_vars
from estimator_dist.task import tracking


def write_params(*, task, options, examples_per_step):
  """The chief writes the job's parameters into its model_dir; returns them."""
  params = {**_program_flags(), "strategy": options.strategy, "workers": task.size,
            "global_batch": examples_per_step, "train_steps": options.train_steps}
  path = os.path.join(options.model_dir, tracking.PARAMS)
  tf.io.gfile.makedirs(os.path.dirname(path))
  with tf.io.gfile.GFile(path, "w") as f:
    f.write(json.dumps(params, indent=1, default=str) + "\n")
  return params


def start(*, params, model_dir, env=os.environ):
  """The chief's JobRun where an engine asked the tasks for one; None elsewhere."""
  uri = env.get(env_vars.MLFLOW_TRACKING_URI)
  if not uri:
    return None
  run = tracking.Run.start(uri, warn=logging.warning, run_id=env.get(env_vars.MLFLOW_RUN_ID),
                           name=os.path.basename(os.path.normpath(model_dir)),
                           tags={"estimator_dist.model_dir": model_dir})
  if run is None:
    return None
  logging.info("estimator_dist: tracked in MLflow at %s, run %s", uri, run.run_id)
  return JobRun(run, model_dir=model_dir, params=params)


class JobRun:
  """The chief's run of one job."""

  def __init__(self, run, *, model_dir, params):
    self._run, self._model_dir, self._params = run, model_dir, params

  def finished(self, summary):
    tracking.record_job(self._run, self._model_dir, summary=summary, params=self._params)
    self._run.end("FINISHED")

  def failed(self, error):
    self._run.log_params(self._params)
    self._run.set_tags({"estimator_dist.failure": f"{type(error).__name__}: {error}"})
    self._run.end("FAILED")


def _program_flags():
  """The values of the program's own flags and of estimator_dist's (absl programs)."""
  values = flags.FLAGS
  if not values.is_parsed():
    return {}
  modules = values.flags_by_module_dict()
  own = [*modules.get(sys.argv[0], []), *modules.get("estimator_dist.training.flags", [])]
  return {flag.name: flag.value for flag in own}
