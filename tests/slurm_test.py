"""SLURM: each task's cluster from the step's variables, and the sbatch script (its real runs:
tests/slurm_cluster_test.py)."""

import json
import subprocess
import sys

import pytest

from estimator_dist import errors
from estimator_dist.contract import cluster
from estimator_dist.contract import env_vars
from estimator_dist.contract import environment
from estimator_dist.contract import slurm_env
from estimator_dist.engines import slurm
from estimator_dist.engines import slurm_options
from estimator_dist.jobs import spec
from tests import helpers


@pytest.mark.parametrize("hostlist,hosts", [
    ("node01", ["node01"]),
    ("node[01-03]", ["node01", "node02", "node03"]),
    ("node[1,3-4],gpu7", ["node1", "node3", "node4", "gpu7"]),
    ("rack[1-2]-n[08-09]", ["rack1-n08", "rack1-n09", "rack2-n08", "rack2-n09"]),
])
def test_expand_hostlist(hostlist, hosts):
  assert slurm_env.expand_hostlist(hostlist) == hosts


def test_expand_tasks_per_node():
  assert slurm_env.expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]


def two_node_step(procid, **extra):
  """The variables srun sets for task `procid` of 4 tasks on 2 nodes."""
  return {"SLURM_PROCID": str(procid), "SLURM_STEP_NUM_TASKS": "4",
          "SLURM_STEP_NODELIST": "node[01-02]", "SLURM_STEP_TASKS_PER_NODE": "2(x2)", **extra}


@pytest.mark.parametrize("extra,tf_configs", [
    ({}, [
        {"cluster": {"chief": ["node01:8888"], "worker": ["node01:8889", "node02:8888",
                                                          "node02:8889"]},
         "task": {"type": "chief", "index": 0}},
        {"task": {"type": "worker", "index": 0}},
        {"task": {"type": "worker", "index": 1}},
        {"task": {"type": "worker", "index": 2}}]),
    ({env_vars.NUM_PS: "1", env_vars.EVALUATOR: "1", env_vars.PORT_BASE: "7000"}, [
        {"cluster": {"chief": ["node01:7000"], "evaluator": ["node01:7001"],
                     "ps": ["node02:7000"], "worker": ["node02:7001"]},
         "task": {"type": "chief", "index": 0}},
        {"task": {"type": "evaluator", "index": 0}},
        {"task": {"type": "ps", "index": 0}},
        {"task": {"type": "worker", "index": 0}}]),
])
def test_a_two_node_step_gives_each_task_its_tf_config(extra, tf_configs, monkeypatch):
  from tensorflow.python.distribute.cluster_resolver import slurm_cluster_resolver  # pylint: disable=g-import-not-at-top
  spec = tf_configs[0]["cluster"]
  for procid, expected in enumerate(tf_configs):
    task = environment.task_from_environment(two_node_step(procid, **extra))
    assert task.source == "SLURM"
    assert json.loads(task.tf_config()) == {"cluster": spec, **expected}
    # TensorFlow's own resolver reads the same variables to the same cluster and task
    # (it needs GPUs to be told, and 0 does not work).
    for name, value in two_node_step(procid).items():
      monkeypatch.setenv(name, value)
    resolver = slurm_cluster_resolver.SlurmClusterResolver(
        jobs={r: len(a) for r, a in spec.items()},
        port_base=int(extra.get(env_vars.PORT_BASE, 8888)), gpus_per_node=2,
        gpus_per_task=1, auto_set_gpu=False)
    assert resolver.cluster_spec().as_dict() == spec
    assert resolver.get_task_info() == (task.role, task.index)
  local = [environment.task_from_environment(two_node_step(p)) for p in range(4)]
  assert [(t.rank, t.local_rank, t.local_size) for t in local] == [
      (0, 0, 2), (1, 1, 2), (2, 0, 2), (3, 1, 2)]


def test_outside_a_multi_task_step_there_is_no_slurm_cluster():
  assert slurm_env.task_from_environment({"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1"}) is None
  assert slurm_env.task_from_environment({"SLURM_JOB_ID": "7"}) is None


@pytest.mark.parametrize("change,message", [
    ({"SLURM_STEP_NODELIST": None},
     "SLURM_STEP_NODELIST is not set: estimator_dist reads a SLURM step's tasks from "
     "SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE, "
     "which srun sets. Start each task with srun (see `estimator-dist slurm`)."),
    ({"SLURM_STEP_TASKS_PER_NODE": "3,1(x2)"},
     "SLURM_STEP_TASKS_PER_NODE '3,1(x2)' gives 5 tasks on 3 node(s), but SLURM_STEP_NODELIST "
     "'node[01-02]' has 2 node(s) and SLURM_STEP_NUM_TASKS is 4. Set all three from one srun "
     "step."),
    ({"SLURM_STEP_NODELIST": "node[01-"},
     "SLURM_STEP_NODELIST 'node[01-' / SLURM_STEP_TASKS_PER_NODE '2(x2)' cannot be read (bad "
     "host list item 'node[01-'); they must be in SLURM's syntax, e.g. 'node[01-02]' and "
     "'2(x2)'."),
    ({"SLURM_PROCID": "4"},
     "SLURM_PROCID is 4: the step has 4 tasks, so it must be 0..3."),
    ({env_vars.NUM_PS: "two"}, "ESTIMATOR_DIST_NUM_PS is 'two': it must be an integer."),
])
def test_bad_slurm_variables(change, message):
  env = two_node_step(0)
  env.update(change)
  env = {k: v for k, v in env.items() if v is not None}
  with pytest.raises(cluster.ClusterConfigError) as e:
    environment.task_from_environment(env)
  assert str(e.value) == message


def test_a_one_process_strategy_refuses_a_multi_task_step():
  from estimator_dist.strategies import factory  # pylint: disable=g-import-not-at-top
  with pytest.raises(cluster.ClusterConfigError) as e:
    factory.adapter_class("local")(task=environment.task_from_environment(two_node_step(1)))
  assert str(e.value) == (
      "strategy 'local' trains in one process, but this is task 1 of a SLURM step of 4 "
      "tasks, so every task would train the same model alone. Start it with `srun "
      "--ntasks=1` (estimator-dist slurm does).")


def sbatch(*args):
  return slurm.script_from_args(list(args))


@pytest.mark.processes
def test_the_command_prints_the_script():
  args = ["--strategy=multi_worker", "--num_workers=2", "--noovercommit", "--", "python",
          "train.py"]
  assert helpers.cli("slurm", *args) == sbatch(*args)


def test_sbatch_script_for_parameter_server():
  script = sbatch("--strategy=parameter_server", "--num_workers=3", "--num_ps=2",
                  "--evaluator", "--nodes=3", "--time=01:00:00", "--", "python", "train.py",
                  "--model_dir=/shared/run")
  assert script.splitlines()[0] == "#!/bin/bash"
  for line in ["#SBATCH --nodes=3", "#SBATCH --ntasks=6", "#SBATCH --time=01:00:00",
               "export ESTIMATOR_DIST_NUM_PS=2", "export ESTIMATOR_DIST_EVALUATOR=1",
               "#SBATCH --signal=B:USR1@25", "#SBATCH --requeue",
               "export ESTIMATOR_DIST_PREEMPTION_GRACE_SECS=25",
               f"srun --kill-on-bad-exit=1 {started(usr1=True)} python train.py "
               f"--model_dir=/shared/run &",
               "export ESTIMATOR_DIST_STRATEGY=parameter_server"]:
    assert line in script.splitlines(), script
  assert "ESTIMATOR_DIST_PORT_BASE" not in script  # The job's own ports (its id).
  subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_a_sites_options_its_own_sbatch_lines_and_its_preamble():
  script = sbatch(
      "--strategy=multi_worker", "--num_workers=2", "--account=ml-team", "--qos=high",
      "--mem=32G", "--constraint=skylake&ib", "--gres=gpu:2", "--exclusive",
      "--output=logs/%x-%j.out", "--sbatch=--mail-type=END", "--sbatch=--mail-user=a@b.org",
      "--preamble=module load cuda/12.2", "--preamble=source ~/venv/bin/activate",
      "--", "python3", "train.py").splitlines()
  for line in ["#SBATCH --account=ml-team", "#SBATCH --qos=high", "#SBATCH --mem=32G",
               "#SBATCH --constraint='skylake&ib'", "#SBATCH --gres=gpu:2",
               "#SBATCH --exclusive", "#SBATCH --output=logs/%x-%j.out",
               "#SBATCH --mail-type=END", "#SBATCH --mail-user=a@b.org"]:
    assert line in script, script
  # The preamble runs before anything of the job, with -e but before -u.
  assert script[script.index("set -eo pipefail") + 2:script.index("set -u")] == [
      "module load cuda/12.2", "source ~/venv/bin/activate"], script
  # Nothing of this machine: the job's helpers run the program's python, as the nodes
  # find it after the preamble.
  assert not [line for line in script if sys.executable in line or helpers.REPO in line]
  assert any(line.startswith("python3 -m estimator_dist.cli progress") for line in script)
  check, = [i for i, line in enumerate(script) if line.startswith(
      "python3 -c 'import estimator_dist' || { echo \"estimator-dist slurm: error: python3 "
      "here cannot import the toolkit")]
  assert check < script.index("# The job's mailbox: its tasks' messages to each other, for "
                              "this attempt."), script  # Before anything that needs it.
  with pytest.raises(errors.ConfigError, match=r"--sbatch='mail-type=END' is not one option"):
    sbatch("--sbatch=mail-type=END", "--", "python", "train.py")


def test_the_jobs_ports_are_its_own():
  """Without --port_base, a job's tasks take ports of their job id: jobs that share a
  node do not collide."""
  addresses = {}
  for job_id in ("1400", "1401"):
    tasks = [environment.task_from_environment(two_node_step(p, SLURM_JOB_ID=job_id))
             for p in range(4)]
    addresses[job_id] = {a for t in tasks for a in sum(t.cluster.values(), ())}
  assert addresses["1400"] == {"node01:10000", "node01:10001", "node02:10000",
                               "node02:10001"}  # 10000 + 32 x (1400 mod 700)
  assert {a.split(":")[1] for a in addresses["1401"]} == {"10032", "10033"}


def started(*, usr1=False):
  """The wrapper of each task's program: it says the task reached the mailbox (and ignores
  USR1 until the program catches it, with a grace)."""
  return ("bash -c '" + ('trap "" USR1; ' if usr1 else "") + 'touch '
          '"$ESTIMATOR_DIST_MAILBOX/reached/$SLURM_PROCID" 2>/dev/null; exec "$@"\' task')


@pytest.mark.parametrize("strategy,line", [
    ("horovod", "srun --kill-on-bad-exit=1 --mpi=pmix python train.py"),
    ("mirrored", "srun --ntasks=1 python train.py"),
])
def test_sbatch_script_for_horovod_and_mirrored(strategy, line):
  script = sbatch(f"--strategy={strategy}", "--num_workers=4", "--", "python", "train.py")
  line = line.replace("python", started(usr1=True) + " python")
  assert line + " &" in script.splitlines(), script
  assert f"#SBATCH --ntasks={4 if strategy == 'horovod' else 1}" in script
  assert f"export ESTIMATOR_DIST_STRATEGY={strategy}" in script.splitlines(), script


def test_the_preemption_signal_and_the_requeue_can_be_changed_or_dropped():
  args = ["--", "python", "train.py"]
  script = sbatch("--strategy=multi_worker", "--preemption_grace_secs=90", "--norequeue", *args)
  assert "#SBATCH --signal=B:USR1@90" in script and "#SBATCH --requeue" not in script
  assert "no --requeue: submit the script again to resume" in script
  subprocess.run(["bash", "-n"], input=script, text=True, check=True)
  script = sbatch("--strategy=multi_worker", "--preemption_grace_secs=0", *args)
  assert "USR1" not in script and "#SBATCH --requeue" not in script, script
  # The tasks are told there is no grace: the signals end them at once.
  assert "export ESTIMATOR_DIST_PREEMPTION_GRACE_SECS=0" in script.splitlines(), script
  step, check, end = script.splitlines()[-3:]
  assert step == f"srun --kill-on-bad-exit=1 {started()} python train.py || code=$?", script
  assert check.endswith(" -m estimator_dist.engines.job_end --strategy=multi_worker "
                        "--tasks=chief:0,worker:0 --mailbox=\"$ESTIMATOR_DIST_MAILBOX\" "
                        "--code=${code:-0} || code=$?") and end == 'exit "${code:-0}"', script


def test_sbatch_refuses_what_cannot_run():
  with pytest.raises(errors.ConfigError, match="needs --num_ps of at least 1"):
    sbatch("--strategy=parameter_server", "--num_ps=0", "--", "python", "t.py")
  with pytest.raises(errors.ConfigError, match="--nodes=4 is more than the job's 2 task"):
    slurm.sbatch_script(spec.JobSpec(strategy="multi_worker", num_workers=2,
                                     command=["python", "t.py"]),
                        options=slurm_options.SlurmOptions(nodes=4))
  with pytest.raises(errors.ConfigError, match="give the program to run after --"):
    sbatch("--strategy=multi_worker")


def test_overcommit_is_added_when_the_tasks_are_more_than_the_cpus():
  def job(strategy, workers, **extra):
    return spec.JobSpec(strategy=strategy, num_workers=workers, command=["python", "t.py"],
                        **extra)
  ps = job("parameter_server", 2, num_ps=1, evaluator=True)  # Four tasks.
  assert slurm_options.needs_overcommit(ps, slurm_options.SlurmOptions(), [2])
  assert not slurm_options.needs_overcommit(ps, slurm_options.SlurmOptions(), [2, 2])
  assert slurm_options.needs_overcommit(ps, slurm_options.SlurmOptions(nodes=1), [2, 2])
  assert not slurm_options.needs_overcommit(job("multi_worker", 2), slurm_options.SlurmOptions(), [2])
  assert slurm_options.needs_overcommit(job("multi_worker", 2), slurm_options.SlurmOptions(cpus_per_task=2),
                                [2])
  assert not slurm_options.needs_overcommit(job("mirrored", 4), slurm_options.SlurmOptions(), [1])
  assert "#SBATCH --overcommit" in sbatch("--strategy=multi_worker", "--overcommit", "--",
                                          "python", "t.py")


def test_without_sinfo_the_generator_says_why_it_did_not_overcommit(monkeypatch, capsys,
                                                                    tmp_path):
  monkeypatch.setenv("PATH", str(tmp_path))
  script = sbatch("--strategy=multi_worker", "--", "python", "t.py")
  assert "--overcommit" not in script.replace("without --overcommit", "")
  assert "sinfo cannot tell the nodes' CPUs here" in capsys.readouterr().err
