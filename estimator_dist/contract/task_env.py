"""The values of the variables an engine gives a task: one function builds them, engines
render them.

  env = task_env.task_environment(job=job, preemption_grace_secs=options.preemption_grace_secs)
  subprocess.Popen(command, env={**os.environ, **env})   # the launcher, Spark
  script += task_env.shell_exports(env)                  # an sbatch script
  container["env"] = task_env.kubernetes_env(env)        # a pod's container

Every engine that starts the same job gives its tasks the same job-wide values
(JOB_WIDE: the strategy, the replicas of a one-process job, the preemption grace, each
formatted one way), so a task behaves the same whoever started it. The other variables belong to an
engine's own way of running a job (the launcher's lock and watchdog, SLURM's cluster
variables, the job's mailbox where the engine gives one, a sweep's trial), and this function
gives them too, from the values that engine passes. Values that differ per task (the
launcher's identity, a bind address) are set
where each task is started, under the names of `env_vars`.

Imports nothing of TensorFlow and no layer above the base: the launcher's programs, the
engines' commands and the tasks all read it.
"""

import math
import shlex
from typing import Optional

from estimator_dist.contract import env_vars

# How long a task asked to stop gets to save (seconds, a float): the launcher's, SLURM's
# and Kubernetes' --preemption_grace_secs default, and a task's when its engine sets none.
DEFAULT_PREEMPTION_GRACE_SECS = 25.0

# The first port on each host of a job whose tasks derive their cluster from PORT_BASE
# (SLURM's) where it is unset and the job has no id (SlurmClusterResolver's).
DEFAULT_PORT_BASE = 8888


def job_port_base(job_id):
  """The first port on each host of the job `job_id` (SLURM's, an integer) where PORT_BASE
  is unset: one of 700 blocks of 32 ports between 10000 and 32400, below Linux's ephemeral
  ports, so that jobs sharing a node (whose ids differ by less than 700) never collide."""
  return 10000 + (job_id % 700) * 32
# How long a training task may take to reach its first step (seconds): the launcher's
# --startup_timeout_secs default, and a task's watchdog's when its engine sets none.
DEFAULT_STARTUP_TIMEOUT_SECS = 120
# The variables every engine gives every task of a job, with the same values.
JOB_WIDE = (env_vars.STRATEGY, env_vars.NUM_DEVICES, env_vars.PREEMPTION_GRACE_SECS)
# What a sweep passes from a trial's environment to the trial's job (its engine: the
# launcher, or Spark's tasks): watch for the sweep's stop request, record into its run.
TRIAL = (env_vars.TRIAL, env_vars.MLFLOW_TRACKING_URI, env_vars.MLFLOW_RUN_ID)


def seconds(value) -> str:
  """A number of seconds as every variable of the contract writes it: 25, 2.5, 0."""
  return f"{float(value):g}"


def whole_seconds(value) -> int:
  """Seconds for an engine that counts whole ones (SLURM's --signal, Kubernetes'
  terminationGracePeriodSeconds), rounded up so a task never gets less than `value`."""
  return math.ceil(value)


def task_environment(*, job=None, preemption_grace_secs: Optional[float] = None,
                     port_base: Optional[int] = None, cluster_from_engine: bool = False,
                     startup_timeout_secs: Optional[int] = None,
                     model_dir: Optional[str] = None, model_dir_lock: Optional[str] = None,
                     mailbox: Optional[str] = None, trial: bool = False,
                     mlflow_tracking_uri: Optional[str] = None,
                     mlflow_run_id: Optional[str] = None) -> dict:
  """The variables (name: value, both strings) an engine gives every task of a job.

  job: the job (a `jobs.spec.JobSpec`: its strategy and its traits, num_workers, num_ps,
    evaluator): every task gets STRATEGY; a one-process job whose replicas are devices gets
    NUM_DEVICES.
  preemption_grace_secs: the grace a task asked to stop gets to save (0: none).
  cluster_from_engine, port_base: tasks that derive their cluster from the engine's
    variables (SLURM's): a job of several TensorFlow tasks gets NUM_PS and EVALUATOR, and
    PORT_BASE, the first port on each host, when one is given (else the job's own:
    `job_port_base`).
  startup_timeout_secs, model_dir_lock: the launcher's watchdog timeout, and the model_dir
    whose lock it holds for the whole job.
  model_dir: the job's model_dir, for an engine that decides it (the launcher, SLURM's --model_dir).
  mailbox: the job's mailbox (contract/mailbox.py), for an engine that gives one.
  trial, mlflow_tracking_uri, mlflow_run_id: a sweep's trial (TRIAL);
  A value left None (or False) leaves its variable out: the task's default applies.
  """
  env = {}
  if preemption_grace_secs is not None:
    env[env_vars.PREEMPTION_GRACE_SECS] = seconds(preemption_grace_secs)
  if job is not None:
    env[env_vars.STRATEGY] = job.strategy
  if job is not None and job.traits.replicas_are_devices:
    env[env_vars.NUM_DEVICES] = str(job.num_workers)
  if cluster_from_engine and job is not None and not (
      job.traits.one_process or job.traits.ranks_from_horovodrun):
    env.update({env_vars.NUM_PS: str(job.num_ps), env_vars.EVALUATOR: str(int(job.evaluator))})
    if port_base is not None:
      env[env_vars.PORT_BASE] = str(port_base)
  if startup_timeout_secs is not None:
    env[env_vars.STARTUP_TIMEOUT_SECS] = str(startup_timeout_secs)
  named = ((env_vars.MODEL_DIR, model_dir), (env_vars.MODEL_DIR_LOCK, model_dir_lock), (env_vars.MAILBOX, mailbox),
           (env_vars.TRIAL, "1" if trial else None),
           (env_vars.MLFLOW_TRACKING_URI, mlflow_tracking_uri),
           (env_vars.MLFLOW_RUN_ID, mlflow_run_id))
  env.update({name: value for name, value in named if value is not None})
  return env


def shell_exports(env) -> list:
  """`env` as the `export NAME=value` lines of a shell script, each value quoted."""
  return [f"export {name}={shlex.quote(value)}" for name, value in env.items()]


def kubernetes_env(env) -> list:
  """`env` as a container's `env:` list of a Kubernetes manifest."""
  return [{"name": name, "value": value} for name, value in env.items()]
