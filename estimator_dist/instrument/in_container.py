"""A task's start of a program where no launcher of ours sets its environment (the pods of
a Kubernetes job, `estimator-dist k8s`):

  python -m estimator_dist.instrument.in_container -- python train.py ...

A program that does not import estimator_dist gets the instrumentation its launcher's
tasks get (`launching.task_env`), its main file found as this container sees it. Before
it starts, the task says in the job's mailbox that it started: a task can start once
per mailbox, so a manifest applied a second time (whose mailbox holds the rounds of its
first run) is refused at once instead of reading them. A program that imports
estimator_dist runs as it is; one the manifest instruments (it gave a mailbox) that this
container cannot find is refused: run as it is, each task would train alone.

An instrumented program runs as this process's child, which passes on the signals the pod
gets (SIGTERM: a preemption) and reads its exit code as the local launcher does: 200 is a
preemption only when the toolkit said so in the mailbox. A program's own 200 ends the pod
with 1, so the JobSet counts its restart against --backoff_limit: it restarts a preempted
job without counting, and would restart a program that exits 200 by itself for ever.
"""

import json
import os
import shlex
import signal
import subprocess
import sys

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import process_identity
from estimator_dist.instrument import launching

# What a pod's process gets and its program must: SIGTERM (a preemption, an eviction),
# USR1 (mpirun's forward of it), and the ends of a terminal.
_FORWARDED = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def task_name(env):
  """This task's name: its TF_CONFIG task's (`worker:1`), else its MPI rank's (`rank:1`)."""
  try:
    task = json.loads(env.get("TF_CONFIG") or "{}").get("task") or {}
  except (ValueError, AttributeError):
    task = {}
  if task.get("type"):
    return f"{task['type']}:{task.get('index', 0)}"
  return f"rank:{env.get('OMPI_COMM_WORLD_RANK', '0')}"


def first_start(env):
  """None when this task starts for the first time in the job's mailbox (made here if it
  is not yet); why not, else."""
  directory, name = env[env_vars.MAILBOX], task_name(env)
  try:
    if mailbox_lib.Mailbox(directory).claim(mailbox_lib.REACHED, name):
      return None
  except OSError as e:
    return (f"the job's mailbox {directory} cannot be made ({e}): its model_dir must be a "
            f"directory every pod shares and can write (--volume_claim).")
  return (f"{name} started before with the job's mailbox {directory}: this manifest ran "
          f"before, and its tasks would read that run's rounds. Print a new manifest with "
          f"estimator-dist k8s and apply it: the job resumes from its latest checkpoint.")


def main(argv):
  command = argv[2:] if argv[1:2] == ["--"] else argv[1:]
  if not command:
    command_line.write_error("give the program to run after --, e.g. -- python train.py")
    return 2
  env, program = dict(os.environ), launching.instrumented(command)
  found = launching.program_file(command)
  if env.get(env_vars.MAILBOX) and not (found and os.path.isfile(found)):
    # The manifest instruments it: run as it is, each task would train alone.
    command_line.write_error(
        f"the job instruments {found or shlex.join(command)}, which this container cannot "
        f"find (in {os.getcwd()}): give the program's path as the image has it, or run "
        f"the manifest's command from the image's working directory.")
    return 2
  if program:
    why = env.get(env_vars.MAILBOX) and first_start(env)
    if why:
      command_line.write_error(why)
      return 2
    env = launching.task_env(env, program)
    if env.get(env_vars.MAILBOX):
      return _run(command, env)
  os.execvpe(command[0], command, env)
  return 127  # Not reached: the program replaced this process.


def _run(command, env):
  """The exit code of the pod running `command` as this process's child (see above)."""
  child, pending = None, []

  def forward(number, _):
    if child is None:
      pending.append(number)  # Before the child exists: passed on once it does.
    else:
      child.send_signal(number)
  # An ignored signal (USR1, which the program ignores until it catches it) is ignored by
  # the child from its start, and passed on once it runs.
  ignored = [n for n in _FORWARDED if signal.getsignal(n) == signal.SIG_IGN]
  for number in set(_FORWARDED) - set(ignored):
    signal.signal(number, forward)
  child = subprocess.Popen(command, env=env, preexec_fn=process_identity.die_with_parent)
  for number in ignored:
    signal.signal(number, forward)
  for number in pending:
    child.send_signal(number)
  code = child.wait()
  if code < 0:  # Ended by a signal: the code a shell gives it.
    return 128 - code
  if code == errors.PREEMPTED_EXIT_CODE and not mailbox_lib.preempted(
      mailbox_lib.Mailbox(env[env_vars.MAILBOX])):
    command_line.write_error(
        f"exit code {code} is the program's own (no task said the toolkit chose it, as it "
        f"does on a preemption): this pod exits 1, a failure that counts against "
        f"--backoff_limit.")
    return 1
  return code

if __name__ == "__main__":
  sys.exit(main(sys.argv))
