"""A model_dir a job can write, checked before any task starts: one line when it is not.

A model_dir on a read-only mount, on a full disk, that is a file, or that this user may
not write made a job fail with a traceback from deep inside (the lock, or TensorFlow's
first save minutes later). `check` does what the job will do first (makes the directory
and writes a file in it) and measures the free space; a ConfigError names the path,
what is wrong and the fix. The launcher checks before it starts any task, a chief
started otherwise when it takes the model_dir's lock. `check_best` checks model_dir/best
the same way: the launcher when the program's flags keep best checkpoints, the process
that keeps them (the chief, or the evaluator task) before it trains or evaluates.
"""

import errno
import os
import pwd
import shutil
import tempfile

from estimator_dist import errors
from estimator_dist.contract import checkpoint_names
from estimator_dist.outputs import best_checkpoints

# Below this a job's first checkpoints and event files may not fit (a checkpoint of a
# model_zoo model is 1-30 MB): refused at the door, not at a save minutes later.
MIN_FREE_BYTES = 50 * 2**20
_SPACE = (errno.ENOSPC, errno.EDQUOT)


def check(model_dir, *, name=None, give="give a directory"):
  """Raises ConfigError unless `model_dir` is, or can be made, a directory where this
  user can write a file, with MIN_FREE_BYTES free. Makes the directory, leaves nothing
  in it. Not a local path (gs://, hdfs://): not checked.

  `name` names it in the message (default `--model_dir=PATH`); `give` begins the fix
  ("give a directory" you can write / on another disk).
  """
  if checkpoint_names.is_url(model_dir):
    return
  name = name or f"--model_dir={model_dir}"
  if not model_dir:
    raise errors.ConfigError(f"{name} is empty: {give} you can write.")
  try:
    os.makedirs(model_dir, exist_ok=True)
    _write_a_file(model_dir)
    usage = shutil.disk_usage(model_dir)
  except OSError as e:
    raise errors.ConfigError(f"{name} {_problem(model_dir, e)}: {_fix(e, give)}.") from None
  free = usage.free
  if usage.total and free < MIN_FREE_BYTES:  # Some FUSE mounts (S3, blobs) report no size.
    raise errors.ConfigError(
        f"{name} has {_mb(free)} free on its file system, below the {_mb(MIN_FREE_BYTES)} "
        f"a job needs for its checkpoints: free space there or {give} on another disk.")


def check_best(model_dir):
  """Raises ConfigError unless model_dir/best, where the best checkpoints are kept
  (`best_checkpoints`), can be written: it may be a mount of its own (a read-only one) that
  the model_dir's check does not see, and a keeper that could not write there failed at the
  first evaluation, with a traceback."""
  best = os.path.join(model_dir, best_checkpoints.DIRECTORY)
  check(best, name=f"{best} (where --keep_best_checkpoints keeps the best checkpoints)",
        give="give a --model_dir whose best/ is a directory")


def _write_a_file(directory):
  """Creates, writes and removes a small file: os.access answers from the permission
  bits, which say yes to root and on a read-only mount. A name of its own: the chief and
  the evaluator task (in process namespaces of their own, maybe with one pid) both check
  best/."""
  handle, probe = tempfile.mkstemp(prefix=".estimator_dist.write_test.", dir=directory)
  try:
    with os.fdopen(handle, "wb") as f:
      f.write(b"estimator_dist")
  finally:
    os.remove(probe)


def _problem(model_dir, error):
  if error.errno == errno.EROFS:
    return "is on a read-only file system"
  if error.errno in (errno.EACCES, errno.EPERM):
    return f"cannot be written by user {_user()} (permission denied)"
  if error.errno == errno.ENOSPC:
    return "cannot be written: its file system is full"
  if error.errno == errno.EDQUOT:
    return f"cannot be written: the disk quota of user {_user()} is used up"
  if os.path.lexists(model_dir) and not os.path.isdir(model_dir):
    return "is a file, not a directory"
  if error.errno == errno.ENOTDIR:
    return f"cannot be made: {_file_on_the_way(model_dir)} is a file, not a directory"
  return f"cannot be made or written ({error.strerror})"


def _fix(error, give):
  if error.errno in _SPACE:
    return f"free space there or {give} on another disk"
  return f"{give} you can write"


def _file_on_the_way(model_dir):
  """The nearest parent of `model_dir` that exists and is not a directory."""
  parent = os.path.dirname(os.path.abspath(model_dir))
  while parent != os.path.dirname(parent) and not os.path.lexists(parent):
    parent = os.path.dirname(parent)
  return parent


def _user():
  try:
    return pwd.getpwuid(os.geteuid()).pw_name
  except KeyError:
    return f"uid {os.geteuid()}"


def _mb(size):
  return f"{size / 2**20:.0f} MB"
