"""`estimator-dist slurm`'s options: the #SBATCH settings a site asks for, the lines it
runs before a job (its modules, its environment), and the step's ports; and whether the
job's tasks need --overcommit on the partition's nodes (sinfo).
"""

import dataclasses
import subprocess
from typing import Optional, Tuple

from estimator_dist import option_flags
from estimator_dist.contract import task_env
from estimator_dist.jobs import launch_options
from estimator_dist.option_flags import option


@dataclasses.dataclass(frozen=True, kw_only=True)
class SlurmOptions:
  """The #SBATCH settings and the step's ports, each with its flag; None leaves a setting
  to SLURM."""
  nodes: Optional[int] = option(None, kind="integer", lower_bound=1,
                                help="Nodes to allocate (default: SLURM decides).")
  cpus_per_task: Optional[int] = option(None, kind="integer", lower_bound=1,
                                        help="#SBATCH --cpus-per-task.")
  gpus_per_task: Optional[int] = option(None, kind="integer", lower_bound=0,
                                        help="#SBATCH --gpus-per-task.")
  time: Optional[str] = option(None, kind="string", help="#SBATCH --time, e.g. 04:00:00.")
  partition: Optional[str] = option(None, kind="string", help="#SBATCH --partition.")
  account: Optional[str] = option(None, kind="string", help="#SBATCH --account.")
  qos: Optional[str] = option(None, kind="string", help="#SBATCH --qos.")
  mem: Optional[str] = option(None, kind="string", help="#SBATCH --mem per node, e.g. 32G.")
  constraint: Optional[str] = option(None, kind="string",
                                     help="#SBATCH --constraint, e.g. 'skylake&ib'.")
  gres: Optional[str] = option(None, kind="string", help="#SBATCH --gres, e.g. gpu:2.")
  exclusive: bool = option(False, kind="bool", help="#SBATCH --exclusive: whole nodes.")
  output: Optional[str] = option(None, kind="string", help="#SBATCH --output, e.g. "
                                 "%x-%j.out (default SLURM's, slurm-%j.out; a directory "
                                 "in it must exist).")
  sbatch: Tuple[str, ...] = option(
      (), kind="multi_string", flag_default=[], help="Any other #SBATCH option, as sbatch "
      "takes it, e.g. --sbatch=--mail-type=END --sbatch=--mail-user=me@site.org")
  preamble: Tuple[str, ...] = option(
      (), kind="multi_string", flag_default=[], help="A line of shell the job runs before "
      "its tasks start, e.g. 'module load cuda/12.2' or 'source ~/venv/bin/activate'; the "
      "tasks run `python` as it then finds it")
  job_name: str = option("estimator-dist", kind="string", help="#SBATCH --job-name.")
  port_base: Optional[int] = option(
      None, kind="integer", lower_bound=1, upper_bound=65000, help="First TensorFlow "
      "server port on each node (default: one of the job's own, from its job id, so jobs "
      "that share a node, up to 32 tasks of each there, do not collide).")
  srun_mpi: str = option("pmix", kind="string",
                         help="horovod: srun --mpi plugin that starts the ranks.")
  overcommit: bool = option(
      False, kind="bool", flag_default=None, help="#SBATCH --overcommit: let tasks share "
      "CPUs. Default: added when the job has more tasks than the partition's nodes have "
      "CPUs (read with sinfo).")
  instrument: str = option(
      "auto", kind="enum", values=launch_options.INSTRUMENT,
      help="auto: a program that does not import estimator_dist trains as written (as "
      "under `estimator-dist launch`); off: it runs as it is.")
  model_dir: Optional[str] = option(
      None, kind="string", help="The job's model_dir, where the Estimators of a program that "
      "names none train (default: the program's --model_dir); the job's mailbox goes there "
      "(else into the directory the job is submitted from).")
  progress_secs: float = option(
      30.0, kind="float", lower_bound=0.0, help="The job's progress lines in its output this "
      "often (the tasks beat in the job's mailbox); 0: none.")
  hang_timeout_secs: int = option(
      300, kind="integer", lower_bound=0, help="End the job's step (exit code 124) when a "
      "training task's heartbeat stops this long, as `launch` does: a stalled job does not "
      "hold its nodes until its time limit; 0: never.")
  preemption_grace_secs: float = option(
      task_env.DEFAULT_PREEMPTION_GRACE_SECS, kind="float", lower_bound=0.0,
      help="#SBATCH --signal=B:USR1@N: this long before the time limit, every task stops at "
      "one agreed step and the chief saves a checkpoint there; 0: no signal.")
  requeue: bool = option(
      True, kind="bool", help="#SBATCH --requeue: after that save, the job requeues itself "
      "and resumes from the checkpoint.")

  def __post_init__(self):
    option_flags.check_declared(self)  # Its values go into a script that runs much later.


def partition_cpus(partition=None):
  """CPUs of each node of `partition` (default: the default one) as sinfo lists them;
  None where sinfo is missing or cannot reach the cluster."""
  try:
    listed = subprocess.run(["sinfo", "--noheader", "--format=%P %D %c"], capture_output=True,
                            text=True, timeout=30, check=False)
  except (OSError, subprocess.TimeoutExpired):
    return None
  if listed.returncode != 0:
    return None
  cpus = []
  try:
    for line in listed.stdout.splitlines():
      name, nodes, per_node = line.split()
      if (name.rstrip("*") == partition) if partition else name.endswith("*"):
        cpus += [int(per_node.rstrip("+"))] * int(nodes)
  except ValueError:  # Not the format asked for: sinfo cannot tell.
    return None
  return cpus or None


def needs_overcommit(job, options, cpus):
  """Whether the job's tasks are more than the CPUs of the nodes it may get."""
  tasks = 1 if job.traits.one_process else job.num_tasks
  available = sum(sorted(cpus, reverse=True)[:options.nodes or len(cpus)])
  return tasks * (options.cpus_per_task or 1) > available
