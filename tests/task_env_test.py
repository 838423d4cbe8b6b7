"""The environment of a task: every engine gives a job's tasks the same variables, with the
values the contract (estimator_dist.contract.task_env) gives; no process is started."""

import ast
import os
import shlex
import sys

import pytest
import yaml
from absl import flags

from estimator_dist import launch
from estimator_dist.contract import env_vars
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import task_env
from estimator_dist.engines import k8s_pods
from estimator_dist.engines import kubernetes
from estimator_dist.engines import slurm
from estimator_dist.engines import slurm_options
from estimator_dist.engines import spark
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import launcher
from estimator_dist.jobs import spec
from estimator_dist.jobs import task_starter
from estimator_dist.strategies import traits
from tests import k8s_schemas

PROGRAM = ("python", "train.py", "--model_dir=/shared/run")
JOBS = [spec.JobSpec(strategy=name, command=PROGRAM, evaluator=traits.of(name).takes_evaluator,
                     num_workers=1 if name == "local" else 3)
        for name in traits.STRATEGIES]
# What only one engine's way of running a job adds (the other variables are JOB_WIDE).
OWN = {"local": {env_vars.STARTUP_TIMEOUT_SECS, env_vars.MODEL_DIR, env_vars.MODEL_DIR_LOCK,
                 env_vars.MAILBOX},
       "slurm": {env_vars.NUM_PS, env_vars.EVALUATOR, env_vars.MAILBOX},
       "kubernetes": set(), "spark": {env_vars.MAILBOX}}


def local_env(job, grace):
  options = launch_options.LaunchOptions(model_dir="/shared/run", preemption_grace_secs=grace)
  return task_starter.job_environment(job, options, mailbox=mailbox_lib.Mailbox("/tmp/job/mailbox"))


def slurm_env(job, grace):
  script = slurm.sbatch_script(job, options=slurm_options.SlurmOptions(
      preemption_grace_secs=grace, progress_secs=30.0))
  exports = [shlex.split(line)[1] for line in script.splitlines()
             if line.startswith("export ")]
  return dict(export.split("=", 1) for export in exports)


def kubernetes_envs(job, grace):
  """{container: its env} of every pod of the job's manifest."""
  manifest = yaml.safe_load(yaml.safe_dump(kubernetes.manifest(
      job, options=kubernetes.KubernetesOptions(image="img", preemption_grace_secs=grace))))
  return {f"{role}/{container['name']}": {v["name"]: v["value"] for v in container["env"]
                                          if "value" in v}
          for role, pod in k8s_schemas.pod_templates(manifest).items()
          for container in pod["spec"]["containers"]}


def spark_env(job):
  return spark.task_environment(job, spark.SparkOptions(), mailbox=mailbox_lib.Mailbox("/shared/run/mailbox"))


def ours(env):
  return {name: value for name, value in env.items() if name.startswith("ESTIMATOR_DIST_")}


def job_wide(env):
  return {name: value for name, value in env.items() if name in task_env.JOB_WIDE}


@pytest.mark.parametrize("job", JOBS, ids=[job.strategy for job in JOBS])
def test_every_engine_gives_a_jobs_tasks_the_same_variables(job):
  grace = task_env.DEFAULT_PREEMPTION_GRACE_SECS
  expected = task_env.task_environment(job=job, preemption_grace_secs=grace)
  assert expected[env_vars.PREEMPTION_GRACE_SECS] == "25"
  assert expected[env_vars.STRATEGY] == job.strategy
  assert (expected.get(env_vars.NUM_DEVICES) == "3") == traits.of(job.strategy).replicas_are_devices
  envs = {"local": local_env(job, grace), "slurm": slurm_env(job, grace),
          "spark": spark_env(job),
          **{f"kubernetes {pod}": env for pod, env in kubernetes_envs(job, grace).items()}}
  for engine, env in envs.items():
    assert job_wide(env) == expected, engine
    own = OWN[engine.split()[0]]
    assert set(ours(env)) - set(task_env.JOB_WIDE) <= own, (engine, env)


def test_a_grace_is_formatted_one_way_by_every_engine_that_takes_one():
  job = spec.JobSpec(strategy="mirrored", num_workers=2, command=PROGRAM)
  envs = [local_env(job, 7.5), slurm_env(job, 7.5), *kubernetes_envs(job, 7.5).values()]
  assert [env[env_vars.PREEMPTION_GRACE_SECS] for env in envs] == ["7.5"] * len(envs)
  # Engines that count whole seconds round up: a task never gets less than its grace.
  assert "#SBATCH --signal=B:USR1@8" in slurm.sbatch_script(
      job, options=slurm_options.SlurmOptions(preemption_grace_secs=7.5)).splitlines()
  manifest = kubernetes.manifest(
      job, options=kubernetes.KubernetesOptions(image="img", preemption_grace_secs=7.5))
  chief = k8s_schemas.pod_templates(manifest)["chief"]["spec"]
  assert chief["terminationGracePeriodSeconds"] == 8 + k8s_pods.TERMINATION_MARGIN_SECS


def test_slurm_tasks_derive_their_cluster_from_the_contracts_variables():
  job = spec.JobSpec(strategy="parameter_server", num_workers=2, num_ps=2, evaluator=True,
                     command=PROGRAM)
  env = slurm_env(job, task_env.DEFAULT_PREEMPTION_GRACE_SECS)
  assert {name: env[name] for name in (env_vars.NUM_PS, env_vars.EVALUATOR)} == {
      env_vars.NUM_PS: "2", env_vars.EVALUATOR: "1"}
  assert env_vars.PORT_BASE not in env  # The job's own ports, from its id.
  script = slurm.sbatch_script(job, options=slurm_options.SlurmOptions(port_base=7000))
  assert f"export {env_vars.PORT_BASE}=7000" in script.splitlines()


def test_a_sweeps_trial_and_an_absent_value_leave_the_rest_to_the_task():
  assert task_env.task_environment() == {}
  assert task_env.task_environment(trial=True, mlflow_run_id="r1") == {
      env_vars.TRIAL: "1", env_vars.MLFLOW_RUN_ID: "r1"}
  assert set(task_env.TRIAL) == {env_vars.TRIAL, env_vars.MLFLOW_TRACKING_URI,
                                 env_vars.MLFLOW_RUN_ID}


def test_renderings_quote_what_a_shell_would_split():
  env = {env_vars.MAILBOX: "/a dir/it's"}
  [line] = task_env.shell_exports(env)
  assert shlex.split(line) == ["export", f"{env_vars.MAILBOX}=/a dir/it's"]
  assert task_env.kubernetes_env(env) == [{"name": env_vars.MAILBOX,
                                           "value": "/a dir/it's"}]


def test_the_grace_flags_of_every_command_are_one_float_with_one_default():
  for define in (launch.define_flags, slurm.define_flags, kubernetes.define_flags):
    values = flags.FlagValues()
    define(values)
    flag = values["preemption_grace_secs"]
    assert (type(flag.default), flag.default) == (float, 25.0), define.__module__


def test_the_contract_imports_only_the_standard_library_the_errors_and_itself():
  # The launcher, every engine's command and every task read it: no TensorFlow, no absl,
  # no layer; `errors` (the standard library only) has the ConfigError that
  # cluster.ClusterConfigError is.
  directory = os.path.dirname(task_env.__file__)
  found = set()
  for name in os.listdir(directory):
    if name.endswith(".py"):
      with open(os.path.join(directory, name)) as f:
        for node in ast.walk(ast.parse(f.read())):
          if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
          elif isinstance(node, ast.ImportFrom):
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
  outside = {m for m in found if m.split(".")[0] not in sys.stdlib_module_names and
             not m.startswith(("estimator_dist.contract.", "estimator_dist.errors"))}
  assert outside == set() and "json" in found
