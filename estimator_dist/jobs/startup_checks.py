"""Refusals at the door: what would make a local job fail, or expose it, found before any
task starts and said in one line with its fix (a ConfigError, which `estimator-dist
launch` prints as it is and exits 2 on).

- `check_job`: the model_dir (without one, the temporary directory where a new one is
  made) can be written and has space, and so can its best/ where the program keeps best
  checkpoints; the program exists and can be run.
- `mailbox_across_hosts`: an instrumented program's tasks on several hosts agree through
  the model_dir, which must be a directory they share.
- `exposure`: on the host network a job's servers stay on loopback only through the
  preload library of `contract/preload.py`. Where it cannot be built they would listen
  on every interface, which only the user's --allow_every_interface accepts.
"""

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from estimator_dist import errors
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import preload
from estimator_dist.instrument import launching
from estimator_dist.jobs import model_dir_arg
from estimator_dist.outputs import model_dir_check


def check_job(job, model_dir, *, local):
  """Raises ConfigError where `job` would fail at its start: its model_dir (the program's,
  else `model_dir`, the launcher's) or the temporary directory cannot be written or has
  too little space, or the program of a local job cannot be run."""
  temporary = _temporary_directory()  # The launcher's own files (the job's mailbox) go there.
  given = model_dir_arg.given_model_dir(list(job.command), model_dir)
  if given is None:
    model_dir_check.check(
        temporary, give="give --model_dir a directory",
        name=f"the temporary directory {temporary} (where a job without --model_dir trains)")
  else:
    model_dir_check.check(given)
    if _keeps_best_checkpoints(job.command):
      model_dir_check.check_best(given)
  if local:  # Elsewhere the program is on the other hosts.
    _check_program(job.command[0])
    _check_python(list(job.command))


def _keeps_best_checkpoints(program):
  """Whether the program's flags say --keep_best_checkpoints=N (N > 0); a program that
  passes best_checkpoints= in its code is checked by its keeper."""
  try:
    return int(model_dir_arg.program_flag(list(program[1:]), "keep_best_checkpoints")) > 0
  except (TypeError, ValueError):
    return False  # Not given, or not a number: the program's flags say so.


def _temporary_directory():
  # gettempdir() skips the candidates ($TMPDIR, /tmp, ...) it cannot write a file to.
  try:
    return tempfile.gettempdir()
  except FileNotFoundError as e:
    raise errors.ConfigError(
        f"no directory for temporary files can be written ({e}): set TMPDIR to a directory "
        f"you can write.") from None


def _check_program(program):
  """The tasks start `program` with this environment's PATH: found now, or refused."""
  if shutil.which(program):
    return
  if os.sep not in program:
    why = "is not on PATH: give its path, or install it"
  elif not os.path.exists(program):
    why = "does not exist: give the path of the program to run after --"
  elif os.path.isdir(program):
    why = "is a directory: give the program to run after --, e.g. -- python train.py"
  else:
    why = "is not executable: chmod +x it, or run it with its interpreter (-- python train.py)"
  raise errors.ConfigError(f"the program {program} {why}.")


def interpreter_note(command):
  """The line that names the interpreter of a `python` program that is not the launcher's
  (the first on PATH, say, with packages of its own); None otherwise."""
  interpreter = (os.path.basename(command[0]).startswith("python")
                 and shutil.which(command[0]))
  if not interpreter or (os.path.dirname(os.path.abspath(interpreter)) ==
                         os.path.dirname(os.path.abspath(sys.executable))):
    return None  # Not a Python, or one of the launcher's environment.
  return (f"the program runs under {interpreter} ({command[0]} on PATH), not the "
          f"launcher's {sys.executable}")


def _check_python(command):
  """A Python program's file must exist (its tasks would fail one by one after the cluster
  started), and a `python` of another environment than the launcher's must import
  TensorFlow, and estimator_dist for a program the tasks instrument."""
  path = launching.program_file(command)
  if path and not os.path.isfile(path):
    raise errors.ConfigError(f"the program file {path} does not exist (in {os.getcwd()}): "
                             f"give the path of the program to run after --.")
  if not os.path.basename(command[0]).startswith("python"):
    return
  interpreter = shutil.which(command[0])
  if (os.path.abspath(interpreter) == os.path.abspath(sys.executable) or
      importlib.util.find_spec("tensorflow") is None):  # Then ours is no better.
    return
  needed = ["tensorflow"] + (["estimator_dist"] if launching.instrumented(command) else [])
  try:
    found = subprocess.run(
        [interpreter, "-c", "import importlib.util, sys; print(*(n for n in sys.argv[1:] "
         "if importlib.util.find_spec(n) is None))", *needed],
        capture_output=True, text=True, timeout=60, check=False)
  except (OSError, subprocess.TimeoutExpired):
    return  # Its tasks say what is wrong with it.
  missing = found.stdout.split()
  if found.returncode == 0 and missing:
    raise errors.ConfigError(
        f"-- {command[0]} runs {interpreter}, which cannot import {' or '.join(missing)}; "
        f"the launcher's own Python can: -- {sys.executable} {shlex.join(command[1:])} (or "
        f"activate its environment first).")


def mailbox_across_hosts(model_dir):
  """Where the mailbox of an instrumented program's tasks on several hosts goes: in the
  job's model_dir (the one given: None for none), which every host must share (a SLURM
  job's is there too). A ConfigError where it cannot be: no model_dir (a new temporary
  directory of this machine), or a URL."""
  if model_dir is None or checkpoint_names.is_url(model_dir):
    where = "a new temporary directory of this machine" if model_dir is None else model_dir
    raise errors.ConfigError(
        f"the tasks of an instrumented program on several hosts agree through the job's "
        f"model_dir, which must be a directory every host shares (not {where}): give "
        f"--model_dir a directory on shared storage (NFS, a cluster file system), or run "
        f"the program as it is with --instrument=off.")
  parent = os.path.join(os.path.abspath(model_dir), checkpoint_names.TOOLKIT_DIR)
  os.makedirs(parent, exist_ok=True)
  return parent


def exposure(options, *, on_host_network, why_no_namespace=None):
  """None where the job's servers stay on loopback; where they listen on every interface,
  the line that says so (--allow_every_interface) or a ConfigError (without it)."""
  if not on_host_network:
    return None
  path, why_not = preload.build()
  if path:
    return None
  why_not = " ".join(why_not.split())  # A compiler's message, in the one line.
  cause = f"the library that keeps the job's servers on loopback cannot be built ({why_not})"
  reach = "every interface, reachable from other machines at this host's addresses"
  if options.allow_every_interface:
    return f"--allow_every_interface: {cause}, so they listen on {reach}"
  where = ("--isolation=host:" if options.isolation == "host" else
           f"--isolation={options.isolation}: this machine cannot give the job its own "
           f"namespaces ({why_no_namespace}), and")
  raise errors.ConfigError(
      f"{where} {cause}, so they would listen on {reach}. Install gcc and run `make "
      f"setup` (it builds the library once), or pass --allow_every_interface to accept "
      f"that the servers listen on every interface.")
