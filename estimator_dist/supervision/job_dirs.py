"""The temporary directories of a local job, named after the launcher that made them.

A job's directories (its mailbox, the private TMPDIR of its tasks, Open MPI's shared
memory in /dev/shm, a new model_dir) are removed when the job ends, however it ends. A
launcher killed with SIGKILL cannot remove them, so their names say which launcher made
them, `estimator_dist_<pid>-<start time>_<kind>_...` (the start time tells a reused pid
apart), and every launch first removes those of launchers that are gone. The launcher
also holds a lock (flock) on each of its directories while it lives: where /proc cannot
see it (another pid namespace sharing /dev/shm, another host sharing the temporary
directory), the lock still tells that its directories are in use.

Python's multiprocessing keeps its semaphores and shared memory in /dev/shm itself (see
`remove_multiprocessing_files`).
"""

import fcntl
import os
import re
import shutil
import stat
import tempfile

from estimator_dist.contract import process_identity

SHARED_MEMORY = "/dev/shm"
_NAME = re.compile(r"^estimator_dist_(\d+)-(\d+)_[a-z]+_")
# Python's multiprocessing names its semaphores sem.mp-*, its shared memory psm_*.
MULTIPROCESSING_FILE = re.compile(r"^(sem\.mp-|psm_)")
_held = []  # Descriptors of this launcher's directories, locked until it exits.


def make(kind, parent=None):
  """A new directory in `parent` (default: the system's temporary directory), named after
  this launcher; `kind` says what it holds (mailbox, job, shm, ...)."""
  pid, _, start = process_identity.launcher_identity().partition(":")
  path = tempfile.mkdtemp(prefix=f"estimator_dist_{pid}-{start}_{kind}_", dir=parent)
  _held.append(os.open(path, os.O_RDONLY | os.O_DIRECTORY))
  fcntl.flock(_held[-1], fcntl.LOCK_SH)
  return path


def _in_use(path):
  """Whether a live process holds the lock of the directory `path`."""
  try:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
  except OSError:
    return True
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return False
  except OSError:
    return True
  finally:
    os.close(fd)  # Releases the lock, if taken.


def shared_memory():
  """Where a job's shared memory goes: /dev/shm, or None (the temporary directory)."""
  return SHARED_MEMORY if os.path.isdir(SHARED_MEMORY) else None


def _roots():
  return [tempfile.gettempdir()] + ([SHARED_MEMORY] if shared_memory() else [])


def _left_by(path, name):
  """The pid of the launcher that made the directory `path`, if it is gone; else None.

  Only a directory (not a link) of this user, whose launcher (pid and start time) no
  longer runs: never another user's, nor a running launcher's.
  """
  match = _NAME.match(name)
  if not match:
    return None
  try:
    info = os.lstat(path)
  except OSError:
    return None
  if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
    return None
  pid, start = match.groups()
  running = process_identity.launcher_identity(int(pid)) == f"{pid}:{start}" or _in_use(path)
  return None if running else pid


def remove_left_behind(log, keep=lambda path: False):
  """Removes the directories of launchers that were killed, logging one line for each.

  A directory for which `keep(path)` is true stays (a new model_dir with checkpoints is
  what the killed job trained).
  """
  for root in _roots():
    try:
      names = sorted(os.listdir(root))
    except OSError:
      continue
    for name in names:
      path = os.path.join(root, name)
      pid = _left_by(path, name)
      if pid is None or keep(path):
        continue
      shutil.rmtree(path, ignore_errors=True)
      if not os.path.exists(path):
        log(f"removed {path}, left by launcher {pid}, which has ended")


def remove_multiprocessing_files(mapped):
  """Removes the semaphores and shared memory of Python's multiprocessing in /dev/shm
  that are among `mapped` (process_tree.shared_memory_files of a stopped task's processes).

  A process that makes them in a `spawn` context (horovodrun: an Event, five semaphores,
  for each command it runs, such as a Gloo rank) leaves their removal to its
  resource tracker, a process of the task: killed with it, the tracker removes nothing.
  """
  if not shared_memory():
    return
  for name in os.listdir(SHARED_MEMORY):
    path = os.path.join(SHARED_MEMORY, name)
    try:
      if MULTIPROCESSING_FILE.match(name) and file_id(path) in mapped:
        os.remove(path)
    except OSError:
      pass  # Removed meanwhile.


def file_id(path):
  """(device, inode) of `path`, as process_tree.shared_memory_files gives them."""
  info = os.lstat(path)
  return info.st_dev, info.st_ino
