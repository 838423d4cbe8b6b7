"""The model_dir of a job: the one its program's arguments give, the launcher's, or a new
one."""

import os
import shutil

from estimator_dist.contract import checkpoint_names
from estimator_dist.outputs import model_dir_lock
from estimator_dist.supervision import job_dirs


def program_model_dir(args):
  """The --model_dir the program's arguments give; None if none (`program_flag`)."""
  return program_flag(args, "model_dir")


def program_flag(args, flag):
  """The value of --`flag` that the program's arguments give, in any form absl reads;
  None if none.

  absl takes `--model_dir=X`, `--model_dir X`, `-model_dir=X` and `-model_dir X`; the
  last one given wins, and `--` ends the flags.
  """
  found = None
  for i, arg in enumerate(args):
    if arg == "--":
      break
    name, sep, value = arg.lstrip("-").partition("=")
    if arg.startswith("-") and name == flag:
      found = value if sep else (args[i + 1] if i + 1 < len(args) else None)
  return found


def with_flag(command, flag, value):
  """`command` (a program and its arguments) with --`flag`=`value` in place of the flag
  its arguments give in any form absl reads (before a `--`); as it is if they give none."""
  args = command[1:]
  if program_flag(args, flag) is None:
    return list(command)
  own = args.index("--") if "--" in args else len(args)
  kept, skip = [], False
  for arg in args[:own]:
    name, sep, _ = arg.lstrip("-").partition("=")
    if skip:
      skip = False
    elif arg.startswith("-") and name == flag:
      skip = not sep
    else:
      kept.append(arg)
  return [command[0], *kept, f"--{flag}={value}", *args[own:]]


def given_model_dir(command, model_dir):
  """The model_dir `job_model_dir` gives the job, before it is made: None for a new
  temporary directory."""
  given = program_model_dir(command[1:])
  return given if given is not None else (model_dir or None)


def job_model_dir(command, model_dir):
  """(the job's model_dir, whether it is a new temporary directory): the program's
  --model_dir, else the launcher's `model_dir`, else a new directory. The command stays
  as it is: its tasks find the model_dir in their environment (env_vars.MODEL_DIR)."""
  given = given_model_dir(command, model_dir)
  if given is not None:
    return given, False
  return job_dirs.make("model"), True  # Named after the launcher: see job_dirs.


def has_checkpoint(model_dir):
  """Whether the local `model_dir` holds checkpoint files or a checkpoint index."""
  return os.path.isdir(model_dir) and any(
      name.startswith("model.ckpt") or name == "checkpoint" for name in os.listdir(model_dir))


def kept_from_scratch(own, *, scratch, job_model_dir):
  """Where the chief's model_dir `own` is kept when it lies in the job's `scratch`
  directory (its TMPDIR: a program's `tempfile.mkdtemp()`), which goes with the job: its
  files are moved into `job_model_dir` (into a directory of its own name there when the
  job's holds files already), and the checkpoint index's paths follow them. None when
  `own` lies elsewhere, or holds nothing."""
  own, scratch = os.path.realpath(own), os.path.realpath(scratch)
  if os.path.commonpath([own, scratch]) != scratch or not _files(own):
    return None
  target = job_model_dir
  if set(_files(target)) - {checkpoint_names.TOOLKIT_DIR}:
    target = os.path.join(target, os.path.basename(own))
  os.makedirs(target, exist_ok=True)
  for name in _files(own):
    if name == checkpoint_names.TOOLKIT_DIR:  # Beside the job's own (its tasks' logs).
      os.makedirs(os.path.join(target, name), exist_ok=True)
      for child in os.listdir(os.path.join(own, name)):
        shutil.move(os.path.join(own, name, child), os.path.join(target, name, child))
    else:
      shutil.move(os.path.join(own, name), os.path.join(target, name))
  index = os.path.join(target, "checkpoint")  # Its paths name `own`: TensorFlow writes them.
  if os.path.isfile(index):
    with open(index) as f:
      text = f.read()
    with open(index, "w") as f:
      f.write(text.replace(f'"{own}/', f'"{target}/'))
  return target


def _files(directory):
  """The names in `directory` but its lock (none if it is not there)."""
  try:
    return [name for name in os.listdir(directory) if name != model_dir_lock.LOCK_NAME]
  except (FileNotFoundError, NotADirectoryError):
    return []
