"""What the suite leaves in the temporary directory and in /dev/shm (conftest checks it).

The suite's processes use a temporary directory of their own (`use_own_temporary_directory`,
as TMPDIR), so what is there is the suite's, whoever else uses /tmp meanwhile. /dev/shm is
the machine's: there only what nothing can remove any more counts, the semaphores and
shared memory of Python's multiprocessing of this user that a test made and that no
process maps once its processes are gone (their resource tracker, which removes them, was
killed with their maker). Another program of this user that leaves one while a test runs
would be blamed on that test.
"""

import os
import re
import shutil
import tempfile
import time

from estimator_dist.supervision import job_dirs
from estimator_dist.supervision import process_tree

# The launcher's directories other than a new model_dir (which a job that finished keeps).
_LAUNCHER_DIR = re.compile(r"^estimator_dist_\d+-\d+_(?!model_)[a-z]+_")


def use_own_temporary_directory():
  """Makes the suite's temporary directory and makes it TMPDIR, for this process and the
  processes it starts; returns it."""
  path = tempfile.mkdtemp(prefix="estimator_dist_tests_")
  os.chmod(path, 0o1777)  # As /tmp: the servers the tests run as other users write there.
  os.environ["TMPDIR"] = tempfile.tempdir = path
  return path


def remove_temporary_directory(path, previous):
  """Removes the suite's temporary directory `path`, and TMPDIR is `previous` again;
  returns the names that were left in it."""
  left = sorted(os.listdir(path))
  shutil.rmtree(path, ignore_errors=True)
  tempfile.tempdir = None
  if previous is None:
    os.environ.pop("TMPDIR", None)
  else:
    os.environ["TMPDIR"] = previous
  return left


def names(directory):
  """The names in `directory`; none where it does not exist (no /dev/shm)."""
  return set(os.listdir(directory)) if os.path.isdir(directory) else set()


def launcher_dirs_left(directory, before):
  """The launcher's directories (not a model_dir) in `directory` that are not among
  `before`: a launcher that was not killed removes them as it ends."""
  return sorted(name for name in names(directory) - before if _LAUNCHER_DIR.match(name))


def orphans_left(before, shared_memory=job_dirs.SHARED_MEMORY):
  """The files of Python's multiprocessing of this user in `shared_memory` that are not
  among `before` and that no process maps."""
  made = []
  for name in names(shared_memory) - before:
    path = os.path.join(shared_memory, name)
    try:
      if job_dirs.MULTIPROCESSING_FILE.match(name) and os.lstat(path).st_uid == os.geteuid():
        made.append(name)
    except OSError:
      pass  # Removed meanwhile.
  if not made:  # Reads every process's map only when there is something to look for.
    return []
  # Twice, a second apart: a file only unmapped for a moment (its maker just ended and its
  # tracker is removing it, or a test of another process of the suite makes one on
  # purpose) is not left behind.
  for look in range(2):
    if look:
      time.sleep(1)
    mapped = process_tree.shared_memory_files(p for p in os.listdir("/proc") if p.isdigit())
    ids = {name: _file_id(os.path.join(shared_memory, name)) for name in made}
    made = [name for name, i in ids.items() if i and i not in mapped]
  return sorted(made)


def _file_id(path):
  try:
    return job_dirs.file_id(path)
  except OSError:
    return None  # Removed meanwhile: not left.
