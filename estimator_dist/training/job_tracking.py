"""The chief's part in tracking: the job's parameters, and its MLflow run where it writes one.

The chief writes the job's parameters into model_dir/estimator_dist/params.json (the
program's flags and estimator_dist's, strategy, workers, global batch, train steps), for
whoever records the run (`outputs.tracking`). Where an engine started the job with
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

from estimator_dist import command_line
from estimator_dist.contract import env_vars
from estimator_dist.outputs import tracking


def write_params(*, task, options, examples_per_step):
  """The chief writes the job's parameters into its model_dir (a warning, never a failure,
  when it cannot); returns them."""
  params = {**_program_flags(), "strategy": options.strategy, "workers": task.size,
            "global_batch": examples_per_step, "train_steps": options.train_steps}
  path = os.path.join(options.model_dir, tracking.PARAMS)
  try:
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(path, "w") as f:
      f.write(json.dumps(params, indent=1, default=str) + "\n")
  except (tf.errors.OpError, OSError) as e:
    logging.warning(command_line.line("the job's parameters were not written to %s: %s"), path, e)
  return params


def start(*, params, model_dir, env=os.environ):
  """The chief's JobRun where an engine asked the tasks for one; None elsewhere."""
  uri = env.get(env_vars.MLFLOW_TRACKING_URI)
  if not uri:
    return None
  run = tracking.job_run(uri, model_dir=model_dir, env=env,
                         log=lambda message: logging.warning(command_line.line("%s"), message))
  return run and JobRun(run, model_dir=model_dir, params=params)


class JobRun:
  """The chief's run of one job."""

  def __init__(self, run, *, model_dir, params):
    self._run, self._model_dir, self._params = run, model_dir, params

  def finished(self, summary):
    tracking.record_job(self._run, self._model_dir, succeeded=True, summary=summary,
                        params=self._params)

  def failed(self, error):
    tracking.record_job(self._run, self._model_dir, succeeded=False, params=self._params,
                        failure=f"{type(error).__name__}: {error}")


# Packages whose flags are not the program's.
_NOT_THE_PROGRAMS = {"absl", "tensorflow", "tensorflow_estimator", "tensorboard", "keras",
                     "horovod"}


def _program_flags():
  """The values of the flags the program and estimator_dist defined (absl programs):
  those of every module but absl's, TensorFlow's and the like."""
  values = flags.FLAGS
  if not values.is_parsed():
    return {}
  return {flag.name: flag.value for module, defined in values.flags_by_module_dict().items()
          if module == sys.argv[0] or module.split(".")[0] not in _NOT_THE_PROGRAMS
          for flag in defined if not flag.name.startswith("estimator_dist_")}
