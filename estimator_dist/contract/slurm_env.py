"""SLURM: this process's task in an `srun` step.

Every task of a step reads the same SLURM variables, the ones TensorFlow's
SlurmClusterResolver reads (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST,
SLURM_STEP_TASKS_PER_NODE), and derives the same cluster in the same order: hosts
sorted, ports counted up from a base on each host, roles chief, evaluator, ps, worker.
Unlike that resolver it needs no GPU and no nvidia-smi. The sbatch script that starts
such a step is `estimator_dist.engines.slurm`'s.
"""

import re

from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.contract import env_vars
from estimator_dist.contract import task_env

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
  job_id = env.get("SLURM_JOB_ID", "")
  port_base = _integer(env, env_vars.PORT_BASE, task_env.job_port_base(int(job_id))
                       if job_id.isdigit() else task_env.DEFAULT_PORT_BASE)
  addresses = [f"{host}:{port_base + offset}"
               for host, count in sorted(zip(hosts, counts)) for offset in range(count)]
  cluster, roles = cluster_lib.assign_roles(
      addresses, _integer(env, env_vars.NUM_PS, 0), env.get(env_vars.EVALUATOR, "0") == "1",
      source="the SLURM step")
  return cluster_lib.task_in(cluster, *roles[rank], source="SLURM")
