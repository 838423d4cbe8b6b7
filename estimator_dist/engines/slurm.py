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
import sys
from typing import Dict

from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import env_vars
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import task_env
from estimator_dist.engines import slurm_options
from estimator_dist.instrument import launching
from estimator_dist.jobs import model_dir_arg
from estimator_dist.jobs import spec
from estimator_dist.supervision import signal_forwarding


def sbatch_script(job, *, options=slurm_options.SlurmOptions()):
  """The sbatch script that runs `job` (a JobSpec) as the tasks of its strategy."""
  strategy, num_tasks, traits = job.strategy, job.num_tasks, job.traits
  if options.nodes and options.nodes > num_tasks:
    raise errors.ConfigError(
        f"--nodes={options.nodes} is more than the job's {num_tasks} task(s).")
  settings = [("job-name", options.job_name), ("nodes", options.nodes), ("ntasks", num_tasks),
              ("cpus-per-task", options.cpus_per_task),
              ("gpus-per-task", options.gpus_per_task), ("time", options.time),
              ("partition", options.partition), ("account", options.account),
              ("qos", options.qos), ("mem", options.mem), ("constraint", options.constraint),
              ("gres", options.gres), ("output", options.output), ("open-mode", "append")]
  grace = options.preemption_grace_secs
  if grace:
    settings.append(("signal", f"B:USR1@{task_env.whole_seconds(grace)}"))
  lines = ["#!/bin/bash"] + [f"#SBATCH --{k}={shlex.quote(str(v))}" for k, v in settings
                             if v is not None]
  lines += [f"#SBATCH {line}" for line in
            (["--exclusive"] if options.exclusive else []) + list(_sbatch_lines(options))]
  if grace and options.requeue:
    lines.append("#SBATCH --requeue")
  if options.overcommit:
    lines += ["#SBATCH --overcommit",
              "# More tasks than CPUs: they share them (without --overcommit the job pends "
              "forever)."]
  lines += ["# A requeued job (scontrol requeue) resumes from its latest checkpoint; its "
            "output is appended.", "set -eo pipefail"]
  if options.preamble:  # Before `set -u`, which some sites' activation scripts fail under.
    lines += ["# The site's preamble (--preamble).", *options.preamble]
  lines += ["set -u", ""]
  if grace:  # USR1 marks a request from here on. Not SIGTERM: scancel ends the job.
    lines += signal_forwarding.trap("USR1")
  # Each task says it reached the mailbox before its program starts (job_end: where none
  # did, the nodes do not share it); a USR1 that comes while it starts must not end it.
  program = (f"""bash -c '{'trap "" USR1; ' if grace else ''}touch """
             f""""${env_vars.MAILBOX}/{mailbox_lib.REACHED}/$SLURM_PROCID" 2>/dev/null; """
             f"""exec "$@"' task {shlex.join(job.command)}""")
  lines += _python_lines(job) + _mailbox_lines(job, options)
  if options.instrument == "auto":
    lines += _instrumented_lines(job)
  # The tasks' variables, the grace also when it is 0 (SIGTERM and USR1 then end a task).
  env = task_env.task_environment(job=job, port_base=options.port_base, cluster_from_engine=True,
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
              f"# ports {options.port_base or 'of the job (from its id)'} and up on each node.",
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
      f'if [ "$code" -ne {code} ]; then {_job_end(job, "$code")} || code=$?; fi',
      f'if [ "$code" -eq {code} ] && {_job_end(job, code)}; then',
      f"  {saved}",
      after, "fi", 'exit "$code"']


# What the watcher runs when a task hangs: the job's steps (not its batch step) killed, so
# the script goes on to say so and exit with 124 (job_end). squeue names a step of an
# array's task by the array's id (36_3.0), and lists its other tasks' steps too.
_CANCEL_STEPS = (
    'for step in $(squeue --noheader --steps --jobs="$SLURM_JOB_ID" --format=%i | grep -E '
    '"^($SLURM_JOB_ID|${SLURM_ARRAY_JOB_ID:-}_${SLURM_ARRAY_TASK_ID:-})[.][0-9]+$"); do '
    'scancel --signal=KILL "$SLURM_JOB_ID.${step##*.}" || exit 1; done')


def _mailbox_lines(job, options):
  """The job's mailbox (contract/mailbox.py), new for each attempt (its job id and restart
  count), in the shared model_dir (else the directory the job was submitted from, which
  SLURM sites share too), and the batch step's watcher of the tasks' heartbeats there,
  which prints the job's progress lines into its output (`progress_watch`)."""
  model_dir = options.model_dir or model_dir_arg.program_model_dir(list(job.command[1:]))
  local = model_dir and not checkpoint_names.is_url(model_dir)
  where = (shlex.quote(f"{model_dir}/{checkpoint_names.TOOLKIT_DIR}") if local else
           f'"${{SLURM_SUBMIT_DIR:-$PWD}}/{checkpoint_names.TOOLKIT_DIR}"')
  lines = ["# The job's mailbox: its tasks' messages to each other, for this attempt.",
           f'export {env_vars.MAILBOX}={where}/mailbox-"${{SLURM_JOB_ID}}-${{SLURM_RESTART_COUNT:-0}}"',
           f'rm -rf "${env_vars.MAILBOX}" && mkdir -p "${env_vars.MAILBOX}/{mailbox_lib.REACHED}"']
  if not (options.progress_secs or options.hang_timeout_secs):
    return [*lines, f"trap 'rm -rf \"${env_vars.MAILBOX}\"' EXIT", ""]
  watch = shlex.join([launching.python_of(job.command), "-m", "estimator_dist.cli", "progress",
                      *([f"--model_dir={model_dir}"] if local else []),
                      f"--progress_secs={options.progress_secs:g}",
                      f"--hang_timeout_secs={options.hang_timeout_secs}", f"--on_hang={_CANCEL_STEPS}"])
  return [*lines, "# Progress lines, and hang checks: the tasks beat in the mailbox, and a watcher "
          "here reads them.",
          f'{watch} --mailbox="${env_vars.MAILBOX}" &',
          "progress_pid=$!",
          f"trap '{{ kill $progress_pid; wait $progress_pid; }} 2>/dev/null || true; "
          f"rm -rf \"${env_vars.MAILBOX}\"' EXIT", ""]


def _sbatch_lines(options):
  """--sbatch's options, each checked to be one option of sbatch's."""
  for line in options.sbatch:
    if not line.startswith("-") or "\n" in line:
      raise errors.ConfigError(
          f"--sbatch={line!r} is not one option of sbatch's: give each as sbatch takes it, "
          f"e.g. --sbatch=--mail-type=END (repeat --sbatch for more).")
  return options.sbatch


def _job_end(job, code):
  """The command that reads the step's exit `code` (a shell word) in the job's mailbox
  (`job_end`): 0 only when every task joined, 200 only when the toolkit preempted."""
  return shlex.join([launching.python_of(job.command), "-m", "estimator_dist.engines.job_end",
                     f"--strategy={job.strategy}", f"--tasks={','.join(sorted(job.task_names))}"]
                    ) + f' --mailbox="${env_vars.MAILBOX}" --code={code}'


def _instrumented_lines(job):
  """A program that does not import estimator_dist: its tasks instrument it, as the local
  launcher's do (estimator_dist/instrument)."""
  program = launching.instrumented(job.command)
  if not program:
    return []
  site = shlex.join([launching.python_of(job.command), "-c", launching.PRINT_SITE])
  return ["# A program that does not import the toolkit: its tasks start the job's strategy",
          "# as they import TensorFlow, and route its Estimator calls.",
          f"export {env_vars.INSTRUMENT}={shlex.quote(program)}",
          f'site="$({site})"', 'export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"']


def _python_lines(job):
  """The check that the nodes' Python (after the preamble) has the toolkit, which the
  job's watcher, its end and an instrumented program need: one line, exit 2, else."""
  python = launching.python_of(job.command)
  missing = 'echo "' + command_line.error_line(
      f"{python} here cannot import the toolkit: add a --preamble that activates the "
      f"environment it is installed in", "slurm") + '"'
  return [f"{shlex.join([python, '-c', 'import estimator_dist'])} || {{ {missing}; exit 2; }}"]


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
    options = option_flags.options_from_flags(slurm_options.SlurmOptions, self.options,
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
      options=option_flags.define_flags(slurm_options.SlurmOptions, flag_values=flag_values))


def _overcommit_from_sinfo(job, options, err):
  cpus = slurm_options.partition_cpus(options.partition)
  if cpus is None:
    command_line.write(err, "sinfo cannot tell the nodes' CPUs here, so the script has no "
                       "--overcommit; if the job's tasks are more than the CPUs of its nodes, "
                       "pass --overcommit, or the job pends forever.", command="slurm")
    return False
  return slurm_options.needs_overcommit(job, options, cpus)


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
