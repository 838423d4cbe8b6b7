"""SLURM: the task of an `srun` step, and the sbatch script that starts a job.

Every task of a step reads the same SLURM variables, the ones TensorFlow's
SlurmClusterResolver reads (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST,
SLURM_STEP_TASKS_PER_NODE), and derives the same cluster in the same order: hosts
sorted, ports counted up from a base on each host, roles chief, evaluator, ps, worker.
Unlike that resolver it needs no GPU and no nvidia-smi.

  estimator-dist slurm --strategy=multi_worker --num_workers=4 --nodes=2 \\
      -- python train.py --model_dir=/shared/run > job.sbatch
"""

import re
import shlex
import sys

from absl import app
from absl import flags

from estimator_dist import cluster as cluster_lib
from estimator_dist import errors
from estimator_dist import jobs
from estimator_dist.strategies import factory

# Set by the sbatch script (or the user) for every task of the step.
NUM_PS_ENV = "ESTIMATOR_DIST_NUM_PS"
EVALUATOR_ENV = "ESTIMATOR_DIST_EVALUATOR"
PORT_BASE_ENV = "ESTIMATOR_DIST_PORT_BASE"
DEFAULT_PORT_BASE = 8888  # SlurmClusterResolver's
_RANGE = re.compile(r"\[([^\]]*)\]")


def _split_top_level(text):
  """`text` split at the commas outside brackets."""
  parts, depth, current = [], 0, ""
  for char in text:
    depth += {"[": 1, "]": -1}.get(char, 0)
    if char == "," and depth == 0:
      parts.append(current)
      current = ""
    else:
      current += char
  return parts + [current]


def _expand_range(text):
  values = []
  for part in text.split(","):
    first, _, last = part.partition("-")
    if not first.isdigit() or (last and not last.isdigit()):
      raise ValueError(f"bad range {part!r}")
    for number in range(int(first), int(last or first) + 1):
      values.append(str(number).zfill(len(first)))
  return values


def expand_hostlist(hostlist):
  """'node[01-02,05],gpu1' -> ['node01', 'node02', 'node05', 'gpu1'] (SLURM's syntax)."""
  hosts = []
  for item in _split_top_level(hostlist.strip()):
    match = _RANGE.search(item)
    if not match:
      if not item or "[" in item or "]" in item:
        raise ValueError(f"bad host list item {item!r}")
      hosts.append(item)
      continue
    prefix, rest = item[:match.start()], item[match.end():]
    for value in _expand_range(match.group(1)):
      hosts += expand_hostlist(prefix + value + rest)
  return hosts


def expand_tasks_per_node(text):
  """'2(x3),1' -> [2, 2, 2, 1] (SLURM's syntax)."""
  counts = []
  for part in text.split(","):
    match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
    if not match:
      raise ValueError(f"bad tasks-per-node item {part!r}")
    counts += [int(match.group(1))] * int(match.group(2) or 1)
  return counts


def _variable(env, name):
  if name not in env:
    raise cluster_lib.ClusterConfigError(
        f"{name} is not set: estimator_dist reads a SLURM step's tasks from SLURM_PROCID, "
        f"SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE, which "
        f"srun sets. Start each task with srun (see `estimator-dist slurm`).")
  return env[name]


def _integer(env, name, default=None):
  value = env.get(name, default) if default is not None else _variable(env, name)
  try:
    return int(value)
  except (TypeError, ValueError):
    raise cluster_lib.ClusterConfigError(f"{name} is {value!r}: it must be an integer.") from None


def task_from_environment(env):
  """This task of an srun step with more than one task; None outside such a step."""
  if "SLURM_PROCID" not in env or "SLURM_STEP_NUM_TASKS" not in env:
    return None
  num_tasks = _integer(env, "SLURM_STEP_NUM_TASKS")
  if num_tasks <= 1:
    return None
  rank = _integer(env, "SLURM_PROCID")
  nodelist = _variable(env, "SLURM_STEP_NODELIST")
  per_node = _variable(env, "SLURM_STEP_TASKS_PER_NODE")
  try:
    hosts, counts = expand_hostlist(nodelist), expand_tasks_per_node(per_node)
  except ValueError as e:
    raise cluster_lib.ClusterConfigError(
        f"SLURM_STEP_NODELIST {nodelist!r} / SLURM_STEP_TASKS_PER_NODE {per_node!r} cannot be "
        f"read ({e}); they must be in SLURM's syntax, e.g. 'node[01-02]' and '2(x2)'.") from None
  if len(hosts) != len(counts) or sum(counts) != num_tasks:
    raise cluster_lib.ClusterConfigError(
        f"SLURM_STEP_TASKS_PER_NODE {per_node!r} gives {sum(counts)} tasks on {len(counts)} "
        f"node(s), but SLURM_STEP_NODELIST {nodelist!r} has {len(hosts)} node(s) and "
        f"SLURM_STEP_NUM_TASKS is {num_tasks}. Set all three from one srun step.")
  if not 0 <= rank < num_tasks:
    raise cluster_lib.ClusterConfigError(
        f"SLURM_PROCID is {rank}: the step has {num_tasks} tasks, so it must be 0..{num_tasks - 1}.")
  port_base = _integer(env, PORT_BASE_ENV, DEFAULT_PORT_BASE)
  addresses = [f"{host}:{port_base + offset}"
               for host, count in sorted(zip(hosts, counts)) for offset in range(count)]
  cluster, roles = cluster_lib.assign_roles(
      addresses, _integer(env, NUM_PS_ENV, 0), env.get(EVALUATOR_ENV, "0") == "1",
      source="the SLURM step")
  return cluster_lib.task_in(cluster, *roles[rank], source="SLURM")


# -- estimator-dist slurm ------------------------------------------------------------------
def define_flags():
  jobs.define_flags("Training tasks (mirrored: replicas of one task).")
  flags.DEFINE_integer("nodes", None, "Nodes to allocate (default: SLURM decides).", lower_bound=1)
  flags.DEFINE_integer("cpus_per_task", None, "#SBATCH --cpus-per-task.", lower_bound=1)
  flags.DEFINE_integer("gpus_per_task", None, "#SBATCH --gpus-per-task.", lower_bound=0)
  flags.DEFINE_string("time", None, "#SBATCH --time, e.g. 04:00:00.")
  flags.DEFINE_string("partition", None, "#SBATCH --partition.")
  flags.DEFINE_string("job_name", "estimator-dist", "#SBATCH --job-name.")
  flags.DEFINE_integer("port_base", DEFAULT_PORT_BASE, "First TensorFlow server port per node.",
                       lower_bound=1, upper_bound=65000)
  flags.DEFINE_string("srun_mpi", "pmix", "horovod: srun --mpi plugin that starts the ranks.")


def sbatch_script(command, strategy, num_workers, num_ps=None, evaluator=False, nodes=None,
                  cpus_per_task=None, gpus_per_task=None, time=None, partition=None,
                  job_name="estimator-dist", port_base=DEFAULT_PORT_BASE, srun_mpi="pmix"):
  """The sbatch script that runs `command` as the tasks of `strategy`."""
  strategy = factory.ALIASES.get(strategy, strategy)
  num_ps = jobs.default_num_ps(strategy, num_ps)
  jobs.check_topology(strategy, num_workers, num_ps, evaluator)
  jobs.check_command(command)
  one_process = strategy in ("local", "mirrored")
  num_tasks = 1 if one_process else num_workers + num_ps + int(evaluator)
  if nodes and nodes > num_tasks:
    raise errors.ConfigError(f"--nodes={nodes} is more than the job's {num_tasks} task(s).")
  options = [("job-name", job_name), ("nodes", nodes), ("ntasks", num_tasks),
             ("cpus-per-task", cpus_per_task), ("gpus-per-task", gpus_per_task),
             ("time", time), ("partition", partition)]
  lines = ["#!/bin/bash"] + [f"#SBATCH --{k}={v}" for k, v in options if v is not None]
  lines += ["set -euo pipefail", ""]
  program = shlex.join(list(command) + [f"--strategy={strategy}"])
  if strategy == "horovod":
    lines += ["# One Horovod rank per task, started by srun through MPI's SLURM support.",
              f"srun --kill-on-bad-exit=1 --mpi={srun_mpi} {program}"]
  elif one_process:
    lines += [f"# One process; {strategy} uses this node's devices.",
              *([f"export {cluster_lib.NUM_DEVICES_ENV}={num_workers}"]
                if strategy == "mirrored" else []),
              f"srun --ntasks=1 {program}"]
  else:
    lines += ["# Each task derives its TF_CONFIG from SLURM_PROCID, SLURM_STEP_NODELIST and",
              "# SLURM_STEP_TASKS_PER_NODE: chief, evaluator, ps, then workers, hosts sorted,",
              f"# ports {port_base} and up on each node.",
              f"export {NUM_PS_ENV}={num_ps}",
              f"export {EVALUATOR_ENV}={int(evaluator)}",
              f"export {PORT_BASE_ENV}={port_base}",
              f"srun --kill-on-bad-exit=1 {program}"]
  return "\n".join(lines) + "\n"


def main(argv):
  f = flags.FLAGS
  try:
    sys.stdout.write(sbatch_script(
        argv[1:], f.strategy, f.num_workers, f.num_ps, f.evaluator, f.nodes, f.cpus_per_task,
        f.gpus_per_task, f.time, f.partition, f.job_name, f.port_base, f.srun_mpi))
  except errors.ConfigError as e:
    sys.stderr.write(f"estimator-dist slurm: {e}\n")
    return 2
  return 0


def run():
  define_flags()
  app.run(main)
