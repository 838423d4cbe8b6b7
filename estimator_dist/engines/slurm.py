"""`estimator-dist slurm`: the sbatch script that runs a job on a SLURM cluster.

  estimator-dist slurm --strategy=multi_worker --num_workers=4 --nodes=2 \\
      -- python train.py --model_dir=/shared/run > job.sbatch

Each task of the srun step derives its place from SLURM's variables
(`estimator_dist.contract.slurm_env`). SLURM sends the script USR1 `preemption_grace_secs`
before the time limit (`--signal`); the script passes it to the step's tasks, which save
at one agreed step and exit with errors.PREEMPTED_EXIT_CODE, and the job requeues itself
(`--requeue`) to resume from that checkpoint.
"""

import dataclasses
import shlex
import subprocess
import sys
from typing import Dict, Optional

from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.contract import env_vars
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import task_env
from estimator_dist.instrument import launching
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import model_dir_arg
from estimator_dist.jobs import spec
from estimator_dist.option_flags import option
from estimator_dist.supervision import signal_forwarding


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
  job_name: str = option("estimator-dist", kind="string", help="#SBATCH --job-name.")
  port_base: int = option(task_env.DEFAULT_PORT_BASE, kind="integer", lower_bound=1,
                          upper_bound=65000, help="First TensorFlow server port per node.")
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
  preemption_grace_secs: float = option(
      task_env.DEFAULT_PREEMPTION_GRACE_SECS, kind="float", lower_bound=0.0,
      help="#SBATCH --signal=B:USR1@N: this long before the time limit, every task stops at "
      "one agreed step and the chief saves a checkpoint there; 0: no signal.")
  requeue: bool = option(
      True, kind="bool", help="#SBATCH --requeue: after that save, the job requeues itself "
      "and resumes from the checkpoint.")


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


def sbatch_script(job, *, options=SlurmOptions()):
  """The sbatch script that runs `job` (a JobSpec) as the tasks of its strategy."""
  strategy, num_tasks, traits = job.strategy, job.num_tasks, job.traits
  if options.nodes and options.nodes > num_tasks:
    raise errors.ConfigError(
        f"--nodes={options.nodes} is more than the job's {num_tasks} task(s).")
  settings = [("job-name", options.job_name), ("nodes", options.nodes), ("ntasks", num_tasks),
              ("cpus-per-task", options.cpus_per_task),
              ("gpus-per-task", options.gpus_per_task), ("time", options.time),
              ("partition", options.partition), ("open-mode", "append")]
  grace = options.preemption_grace_secs
  if grace:
    settings.append(("signal", f"B:USR1@{task_env.whole_seconds(grace)}"))
  lines = ["#!/bin/bash"] + [f"#SBATCH --{k}={v}" for k, v in settings if v is not None]
  if grace and options.requeue:
    lines.append("#SBATCH --requeue")
  if options.overcommit:
    lines += ["#SBATCH --overcommit",
              "# More tasks than CPUs: they share them (without --overcommit the job pends "
              "forever)."]
  lines += ["# A requeued job (scontrol requeue) resumes from its latest checkpoint; its "
            "output is appended.", "set -euo pipefail", ""]
  if grace:  # USR1 marks a request from here on. Not SIGTERM: scancel ends the job.
    lines += signal_forwarding.trap("USR1")
  # Each task says it reached the mailbox before its program starts (job_end: where none
  # did, the nodes do not share it); a USR1 that comes while it starts must not end it.
  program = (f"""bash -c '{'trap "" USR1; ' if grace else ''}touch """
             f""""${env_vars.MAILBOX}/{mailbox_lib.REACHED}/$SLURM_PROCID" 2>/dev/null; """
             f"""exec "$@"' task {shlex.join(job.command)}""")
  lines += _mailbox_lines(job, options)
  if options.instrument == "auto":
    lines += _instrumented_lines(job)
  # The tasks' variables, the grace also when it is 0 (SIGTERM and USR1 then end a task).
  env = task_env.task_environment(job=job, port_base=options.port_base,
                                  preemption_grace_secs=grace, model_dir=options.model_dir)
  if traits.ranks_from_horovodrun:
    lines += ["# One Horovod rank per task, started by srun through MPI's SLURM support.",
              *task_env.shell_exports(env)]
    step = f"srun --kill-on-bad-exit=1 --mpi={options.srun_mpi} {program}"
  elif traits.one_process:
    lines += [f"# One process; {strategy} uses this node's devices.",
              *task_env.shell_exports(env)]
    step = f"srun --ntasks=1 {program}"
  else:
    lines += ["# Each task derives its TF_CONFIG from SLURM_PROCID, SLURM_STEP_NODELIST and",
              "# SLURM_STEP_TASKS_PER_NODE: chief, evaluator, ps, then workers, hosts sorted,",
              f"# ports {options.port_base} and up on each node.",
              *task_env.shell_exports(env)]
    step = f"srun --kill-on-bad-exit=1 {program}"
  lines += (_preemptible(step, job, options) if grace else
            [f"{step} || code=$?", f'{_job_end(job, "${code:-0}")} || code=$?',
             'exit "${code:-0}"'])
  return "\n".join(lines) + "\n"


def echo(message, command):
  """A line of a job script that prints `message` as one of `command`'s lines."""
  return f'echo "{command_line.line(message, command)}"'


def requeue(command):
  """The job script's requeue of its own job, written by `command` (slurm, sweep)."""
  return ('scontrol requeue "$SLURM_JOB_ID" || ' +
          echo("the requeue failed: submit the script again to resume", command))


def _preemptible(step, job, options):
  """The step run so that USR1 (SLURM's --signal) reaches its tasks, which save and exit
  with errors.PREEMPTED_EXIT_CODE; then the job requeues itself (or says how to resume)."""
  code = errors.PREEMPTED_EXIT_CODE
  after = "  " + (requeue("slurm") if options.requeue else
                  echo("no --requeue: submit the script again to resume", "slurm"))
  forward = 'scancel --signal=USR1 "$SLURM_JOB_ID"'
  saved = echo(f"job $SLURM_JOB_ID was preempted and saved its work (exit code {code})",
               "slurm")
  return [
      "", "# Preemption: USR1 goes to every task; they stop at one agreed step, the chief",
      f"# saves a checkpoint there, and they exit with {code}.",
      *signal_forwarding.lines(step, forward=forward),
      "# The step's code is the toolkit's verdict only when a task said so (job_end).",
      f'if [ "$code" -eq 0 ]; then {_job_end(job, 0)} || code=$?; fi',
      f'if [ "$code" -eq {code} ] && {_job_end(job, code)}; then',
      f"  {saved}",
      after, "fi", 'exit "$code"']


def _mailbox_lines(job, options):
  """The job's mailbox (contract/mailbox.py), new for each attempt (its job id and restart
  count), in the shared model_dir (else the directory the job was submitted from, which
  SLURM sites share too), and the batch step's watcher of the tasks' heartbeats there,
  which prints the job's progress lines into its output (`progress_watch`)."""
  model_dir = options.model_dir or model_dir_arg.program_model_dir(list(job.command[1:]))
  local = model_dir and "://" not in model_dir
  where = (shlex.quote(f"{model_dir}/estimator_dist") if local else
           '"${SLURM_SUBMIT_DIR:-$PWD}/estimator_dist"')
  lines = ["# The job's mailbox: its tasks' messages to each other, for this attempt.",
           f'export {env_vars.MAILBOX}={where}/mailbox-"${{SLURM_JOB_ID}}-${{SLURM_RESTART_COUNT:-0}}"',
           f'rm -rf "${env_vars.MAILBOX}" && mkdir -p "${env_vars.MAILBOX}/{mailbox_lib.REACHED}"']
  if not options.progress_secs:
    return [*lines, f"trap 'rm -rf \"${env_vars.MAILBOX}\"' EXIT", ""]
  watch = shlex.join([sys.executable, "-m", "estimator_dist.cli", "progress",
                      *([f"--model_dir={model_dir}"] if local else []),
                      f"--progress_secs={options.progress_secs:g}"])
  return [*lines, "# Progress lines: the tasks beat in the mailbox, and a watcher here reads them.",
          f'{watch} --mailbox="${env_vars.MAILBOX}" &',
          "progress_pid=$!",
          f"trap '{{ kill $progress_pid; wait $progress_pid; }} 2>/dev/null || true; "
          f"rm -rf \"${env_vars.MAILBOX}\"' EXIT", ""]


def _job_end(job, code):
  """The command that reads the step's exit `code` (a shell word) in the job's mailbox
  (`job_end`): 0 only when every task joined, 200 only when the toolkit preempted."""
  return shlex.join([sys.executable, "-m", "estimator_dist.engines.job_end",
                     f"--strategy={job.strategy}", f"--tasks={','.join(sorted(job.task_names))}"]
                    ) + f' --mailbox="${env_vars.MAILBOX}" --code={code}'


def _instrumented_lines(job):
  """A program that does not import estimator_dist: its tasks instrument it, as the local
  launcher's do (estimator_dist/instrument)."""
  program = launching.instrumented(job.command)
  if not program:
    return []
  env = launching.task_env({}, program)
  return ["# A program that does not import the toolkit: its tasks start the job's strategy",
          "# as they import TensorFlow, and route its Estimator calls.",
          f"export {env_vars.INSTRUMENT}={shlex.quote(program)}",
          f'export PYTHONPATH={shlex.quote(env["PYTHONPATH"])}"${{PYTHONPATH:+:$PYTHONPATH}}"']


@dataclasses.dataclass(frozen=True, kw_only=True)
class SlurmFlags:
  """The flags of `estimator-dist slurm`, as FlagHolders: the job's, and {field: holder}
  of SlurmOptions'."""
  job: spec.JobFlags
  options: Dict[str, flags.FlagHolder]

  def script(self, command, *, err=None):
    """The sbatch script of `command` run as the flags say; `err` (default stderr) gets
    the warning when sinfo cannot tell whether the job needs --overcommit."""
    job = self.job.job(command)
    overcommit = self.options["overcommit"].value
    options = option_flags.options_from_flags(SlurmOptions, self.options,
                                              overcommit=bool(overcommit))
    if overcommit is None:  # Not given: as sinfo tells.
      options = dataclasses.replace(options, overcommit=_overcommit_from_sinfo(
          job, options, err or sys.stderr))
    return sbatch_script(job, options=options)


def define_flags(flag_values=flags.FLAGS) -> SlurmFlags:
  """Defines the flags of `estimator-dist slurm` on `flag_values`."""
  return SlurmFlags(
      job=spec.define_flags(flag_values, num_workers_help="Training tasks (mirrored: "
                            "replicas of one task)."),
      options=option_flags.define_flags(SlurmOptions, flag_values=flag_values))


def _overcommit_from_sinfo(job, options, err):
  cpus = partition_cpus(options.partition)
  if cpus is None:
    command_line.write(err, "sinfo cannot tell the nodes' CPUs here, so the script has no "
                       "--overcommit; if the job's tasks are more than the CPUs of its nodes, "
                       "pass --overcommit, or the job pends forever.", command="slurm")
    return False
  return needs_overcommit(job, options, cpus)


def script_from_args(args):
  """The sbatch script for command-line `args` (flags, --, program), parsed in-process."""
  values = flags.FlagValues()
  slurm_flags = define_flags(values)
  rest = values(["estimator-dist slurm", *args])
  return slurm_flags.script(rest[1:])


def main(argv, slurm_flags):
  try:
    sys.stdout.write(slurm_flags.script(argv[1:]))
  except errors.ConfigError as e:
    command_line.write_error(str(e), "slurm")
    return 2
  return 0


def run():
  slurm_flags = define_flags()
  command_line.run(lambda argv: main(argv, slurm_flags), command="slurm")
