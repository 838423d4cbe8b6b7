"""One job per model_dir: a lock file that names its holder.

Two jobs writing one model_dir overwrite each other's checkpoints and both report
success. The launcher holds the lock for its whole job (its tasks are told so through
`env_vars.MODEL_DIR_LOCK`); a chief started some other way takes it itself. A lock whose
holder is no longer running on this host is taken over, with a message.
"""

import contextlib
import json
import os
import socket
import time

from estimator_dist import errors
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import env_vars
from estimator_dist.contract import process_identity
from estimator_dist.outputs import model_dir_check

LOCK_NAME = ".estimator_dist.lock"


def _holder_running(holder):
  if holder.get("host") != socket.gethostname():
    return True  # Nothing here can tell; the message says how to free it.
  pid, _, start = str(holder.get("process", "")).partition(":")
  return pid.isdigit() and process_identity.launcher_identity(int(pid)) == f"{pid}:{start}"


def _describe(holder, path):
  return (f"pid {str(holder.get('process', '?')).partition(':')[0]} on "
          f"{holder.get('host', '?')}, started {holder.get('started', '?')} (lock {path})")


@contextlib.contextmanager
def held(model_dir, log):
  """Holds the lock of `model_dir` while the block runs; `log(message)` reports a takeover.

  A model_dir that is not a local path (gs://, hdfs://) is not locked. One that cannot
  be written, or has too little space, is refused in one line (model_dir_check).
  """
  if checkpoint_names.is_url(model_dir):
    yield
    return
  model_dir_check.check(model_dir)  # Also makes it.
  path = os.path.join(model_dir, LOCK_NAME)
  mine = {"host": socket.gethostname(), "process": process_identity.launcher_identity(),
          "started": time.strftime("%Y-%m-%d %H:%M:%S")}
  while True:
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
      try:
        with open(path) as f:
          holder = json.load(f)
      except (OSError, ValueError):
        holder = {}  # Half written, or removed meanwhile: its writer is not running.
      if holder and _holder_running(holder):
        raise errors.ConfigError(
            f"model_dir {model_dir} is in use by another job: {_describe(holder, path)}. "
            f"Two jobs in one model_dir overwrite each other's checkpoints. Wait for it to "
            f"end or stop it, or train into another model_dir; if that job is gone, delete "
            f"the lock.") from None
      log(f"model_dir {model_dir} was locked by {_describe(holder, path)}, which is no "
          f"longer running; taking the lock over")
      with contextlib.suppress(FileNotFoundError):
        os.remove(path)
      continue
    with os.fdopen(fd, "w") as f:
      json.dump(mine, f)
    break
  try:
    yield
  finally:
    with contextlib.suppress(OSError, ValueError):
      with open(path) as f:
        if json.load(f) == mine:
          os.remove(path)


def held_by_launcher(model_dir, env=None):
  """Whether the launcher that started this task holds the lock of `model_dir`."""
  env = os.environ if env is None else env
  return bool(model_dir) and env.get(env_vars.MODEL_DIR_LOCK) == model_dir
