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
"""

import json
import os
import shlex
import sys

from estimator_dist import command_line
from estimator_dist.contract import env_vars
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.instrument import launching


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
  os.execvpe(command[0], command, env)
  return 127  # Not reached: the program replaced this process.


if __name__ == "__main__":
  sys.exit(main(sys.argv))
