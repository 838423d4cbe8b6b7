"""This process's task, from the first source its environment has.

The sources, in the order they are looked for:
- TF_CONFIG (`cluster.parse_tf_config`);
- a Horovod or MPI launcher's variables (`HOROVOD_RANK`, `OMPI_COMM_WORLD_RANK`, ...);
- a SLURM job step (`slurm_env`);
- nothing: one local process.
Spark's barrier tasks are turned into TF_CONFIG by `estimator_dist.engines.spark`.
"""

import os
from typing import Mapping, Optional

from estimator_dist.contract import cluster
from estimator_dist.contract import slurm_env


def task_from_environment(env: Optional[Mapping[str, str]] = None) -> cluster.TaskInfo:
  """This process's task: from TF_CONFIG, Horovod's variables, SLURM, or one local process."""
  env = os.environ if env is None else env
  if env.get("TF_CONFIG", "").strip():
    return cluster.parse_tf_config(env["TF_CONFIG"])
  return (cluster.from_horovod_environment(env) or slurm_env.task_from_environment(env) or
          cluster.LOCAL_TASK)
