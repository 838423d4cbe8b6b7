"""`estimator-dist slurm`: the sbatch script that runs a job on a SLURM cluster.

  estimator-dist slurm --strategy=multi_worker --num_workers=4 --nodes=2 \\
      -- python train.py --model_dir=/shared/run > job.sbatch

Each task of the srun step derives its place from SLURM's variables
(`estimator_dist.task.slurm_env`).
"""

import dataclasses
import shlex
import sys
from typing import Optional

from absl import app
from absl import flags

from estimator_dist import errors
from estimator_dist.jobs import spec
from estimator_dist.task import cluster as cluster_lib
from estimator_dist.task import slurm_env


@dataclasses.dataclass(frozen=True, kw_only=True)
class SlurmOptions:
  """The #SBATCH settings and the step's ports; None leaves a setting to SLURM."""
  nodes: Optional[int] = None
  cpus_per_task: Optional[int] = None
  gpus_per_task: Optional[int] = None
  time: Optional[str] = None
  partition: Optional[str] = None
  job_name: str = "estimator-dist"
  port_base: int = slurm_env.DEFAULT_PORT_BASE
  srun_mpi: str = "pmix"


def sbatch_script(job, *, options=SlurmOptions()):
  """The sbatch script that runs `job` (a JobSpec) as the tasks of its strategy."""
  strategy, num_tasks = job.strategy, job.num_tasks
  if options.nodes and options.nodes > num_tasks:
    raise errors.ConfigError(
        f"--nodes={options.nodes} is more than the job's {num_tasks} task(s).")
  settings = [("job-name", options.job_name), ("nodes", options.nodes), ("ntasks", num_tasks),
              ("cpus-per-task", options.cpus_per_task),
              ("gpus-per-task", options.gpus_per_task), ("time", options.time),
              ("partition", options.partition)]
  lines = ["#!/bin/bash"] + [f"#SBATCH --{k}={v}" for k, v in settings if v is not None]
  lines += ["set -euo pipefail", ""]
  program = shlex.join(job.program)
  if strategy == "horovod":
    lines += ["# One Horovod rank per task, started by srun through MPI's SLURM support.",
              f"srun --kill-on-bad-exit=1 --mpi={options.srun_mpi} {program}"]
  elif job.traits.one_process:
    lines += [f"# One process; {strategy} uses this node's devices.",
              *([f"export {cluster_lib.NUM_DEVICES_ENV}={job.num_workers}"]
                if strategy == "mirrored" else []),
              f"srun --ntasks=1 {program}"]
  else:
    lines += ["# Each task derives its TF_CONFIG from SLURM_PROCID, SLURM_STEP_NODELIST and",
              "# SLURM_STEP_TASKS_PER_NODE: chief, evaluator, ps, then workers, hosts sorted,",
              f"# ports {options.port_base} and up on each node.",
              f"export {slurm_env.NUM_PS_ENV}={job.num_ps}",
              f"export {slurm_env.EVALUATOR_ENV}={int(job.evaluator)}",
              f"export {slurm_env.PORT_BASE_ENV}={options.port_base}",
              f"srun --kill-on-bad-exit=1 {program}"]
  return "\n".join(lines) + "\n"


def define_flags(flag_values=flags.FLAGS):
  """Defines the flags of `estimator-dist slurm`; returns (JobFlags, option holders)."""
  f = flag_values
  job = spec.define_flags(f, num_workers_help="Training tasks (mirrored: replicas of one task).")
  holders = {
      "nodes": flags.DEFINE_integer("nodes", None, "Nodes to allocate (default: SLURM "
                                    "decides).", lower_bound=1, flag_values=f),
      "cpus_per_task": flags.DEFINE_integer("cpus_per_task", None, "#SBATCH --cpus-per-task.",
                                            lower_bound=1, flag_values=f),
      "gpus_per_task": flags.DEFINE_integer("gpus_per_task", None, "#SBATCH --gpus-per-task.",
                                            lower_bound=0, flag_values=f),
      "time": flags.DEFINE_string("time", None, "#SBATCH --time, e.g. 04:00:00.",
                                  flag_values=f),
      "partition": flags.DEFINE_string("partition", None, "#SBATCH --partition.",
                                       flag_values=f),
      "job_name": flags.DEFINE_string("job_name", "estimator-dist", "#SBATCH --job-name.",
                                      flag_values=f),
      "port_base": flags.DEFINE_integer("port_base", slurm_env.DEFAULT_PORT_BASE,
                                        "First TensorFlow server port per node.",
                                        lower_bound=1, upper_bound=65000, flag_values=f),
      "srun_mpi": flags.DEFINE_string("srun_mpi", "pmix", "horovod: srun --mpi plugin that "
                                      "starts the ranks.", flag_values=f),
  }
  return job, holders


def _script(job_flags, holders, command):
  options = SlurmOptions(**{name: holder.value for name, holder in holders.items()})
  return sbatch_script(job_flags.job(command), options=options)


def script_from_args(args):
  """The sbatch script for command-line `args` (flags, --, program), parsed in-process."""
  values = flags.FlagValues()
  job_flags, holders = define_flags(values)
  rest = values(["estimator-dist slurm", *args])
  return _script(job_flags, holders, rest[1:])


def main(argv, job_flags, holders):
  try:
    sys.stdout.write(_script(job_flags, holders, argv[1:]))
  except errors.ConfigError as e:
    sys.stderr.write(f"estimator-dist slurm: {e}\n")
    return 2
  return 0


def run():
  job_flags, holders = define_flags()
  app.run(lambda argv: main(argv, job_flags, holders))
