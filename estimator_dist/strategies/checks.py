"""Whether this process's task can train under a strategy: pure checks, no side effects.

Each failure is one ClusterConfigError that names what is wrong and the fix.
"""

import json

from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.strategies import traits as traits_lib


def check_task(traits: traits_lib.Traits, task: cluster_lib.TaskInfo) -> cluster_lib.TaskInfo:
  """Returns `task` if strategy `traits` can train as it; raises ClusterConfigError."""
  if traits.one_process:
    refuse_cluster(traits.name, task)
    return task
  if not traits.uses_tf_config:  # Horovod: its ranks are the task.
    return task
  name, cluster = traits.name, task.cluster
  if task.source == "remote_cluster":  # A standalone client of standard servers.
    if traits.needs_ps and not cluster.get("ps"):
      raise cluster_lib.ClusterConfigError(
          f"remote_cluster has {sorted(cluster)}, but strategy '{name}' needs at least one "
          f"'ps' task: add \"ps\": [\"host:port\"].")
    return task
  if task.source == "horovod":
    raise cluster_lib.ClusterConfigError(
        f"this process is rank {task.rank} of {task.size} started by horovodrun or mpirun, "
        f"but strategy '{name}' takes its cluster from TF_CONFIG. Use --strategy=horovod "
        f"under horovodrun, or start {name} with `estimator-dist launch --strategy={name}`.")
  where = "the cluster derived from SLURM" if task.source == "SLURM" else "TF_CONFIG's cluster"
  if not cluster:
    if traits.needs_ps:
      raise cluster_lib.ClusterConfigError(
          f"strategy '{name}' needs ps tasks, but TF_CONFIG has no cluster. Start it with "
          f"`python -m estimator_dist.launch --strategy={name} --num_workers=2 --num_ps=1 "
          f"-- python train.py`, or set TF_CONFIG with 'chief', 'worker' and 'ps' tasks.")
    return task
  for role in cluster:
    if role not in traits.roles:
      raise cluster_lib.ClusterConfigError(
          f"{where} has '{role}' tasks, which strategy '{name}' does not use "
          f"(it takes {', '.join(traits.roles)}). Remove them from "
          f"TF_CONFIG or pick a strategy that uses them.")
  if "chief" not in cluster:
    workers = list(cluster["worker"])
    fix = {"chief": workers[:1], **({"worker": workers[1:]} if workers[1:] else {}),
           **{r: list(a) for r, a in cluster.items() if r != "worker"}}
    raise cluster_lib.ClusterConfigError(
        f"{where} has no 'chief' task (it has {sorted(cluster)}), and strategy "
        f"'{name}' trains through Estimator, which needs one. Make the first worker "
        f"the chief and number the other workers from 0: \"cluster\": {json.dumps(fix)}.")
  if traits.needs_ps and not cluster.get("ps"):
    raise cluster_lib.ClusterConfigError(
        f"strategy '{name}' needs at least one 'ps' task, but {where} has "
        f"{sorted(cluster)}. Add \"ps\": [\"host:port\"] to the cluster (launcher: --num_ps=1).")
  return task


def refuse_cluster(name: str, task: cluster_lib.TaskInfo):
  """A one-process strategy must not run as one of several tasks: each would train alone."""
  if task.source == "horovod" and task.size > 1:
    raise cluster_lib.ClusterConfigError(
        f"strategy '{name}' trains in one process, but this is rank {task.rank} of "
        f"{task.size} started by horovodrun or mpirun, so every rank would train the same "
        f"model alone. Use --strategy=horovod, or start one process.")
  if task.source == "SLURM":
    raise cluster_lib.ClusterConfigError(
        f"strategy '{name}' trains in one process, but this is task {task.rank} of a SLURM "
        f"step of {sum(map(len, task.cluster.values()))} tasks, so every task would train "
        f"the same model alone. Start it with `srun --ntasks=1` (estimator-dist slurm does).")
  alone = dict(task.cluster) in ({}, {"chief": task.cluster.get("chief")})
  if not alone:
    raise cluster_lib.ClusterConfigError(
        f"strategy '{name}' does not use TF_CONFIG, but TF_CONFIG describes a cluster "
        f"{sorted(task.cluster)}, which Estimator would wait for. Unset TF_CONFIG (the launcher "
        f"does), or pick multi_worker or parameter_server to train on that cluster.")
