"""`horovodrun` as the launcher runs it (`python -m estimator_dist.jobs.horovodrun_entry
ARGS` is `horovodrun ARGS`), with its questions about Horovod's build answered from a
record.

Before it starts a rank, horovodrun asks whether Horovod was built with MPI and with Gloo,
and answers by importing Horovod's TensorFlow extension in a process of its own: seconds
of TensorFlow's import before any rank of any job starts. The answers change only when
Horovod is installed again. Horovod's own check gives them once per build of its
extensions (their paths, sizes and times), the user's cache keeps them (`user_cache`),
and every later job reads them back. Each is asked when horovodrun needs it, as Horovod
asks it.
"""

import contextlib
import glob
import importlib.util
import json
import os
import sys

from estimator_dist.contract import user_cache
from estimator_dist.contract import whole_file

RECORD = "horovod_build.json"


def _extensions():
  """[path, size, mtime] of each of Horovod's framework extensions (not imported)."""
  root = os.path.dirname(importlib.util.find_spec("horovod").origin)
  return [[path, os.stat(path).st_size, os.stat(path).st_mtime_ns]
          for path in sorted(glob.glob(os.path.join(root, "*", "mpi_lib*.so")))]


def built(controller):
  """Whether Horovod was built with `controller` ("mpi" or "gloo"): Horovod's answer, from
  the record of this build when it has one."""
  path = os.path.join(user_cache.directory(), RECORD)
  record = {"extensions": _extensions(), "built": {}}
  with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
    with open(path) as f:
      recorded = json.load(f)
    if recorded["extensions"] == record["extensions"]:
      record["built"] = dict(recorded["built"])
  if controller in record["built"]:
    return record["built"][controller]
  from horovod.common import util  # pylint: disable=g-import-not-at-top
  answer = getattr(util, f"{controller}_built")()
  if answer is None:  # No extension loaded (TensorFlow failed to import): not an answer.
    return None
  record["built"][controller] = answer
  with contextlib.suppress(OSError):  # A cache it cannot write: asked again next time.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    whole_file.write_json(path, record)
  return answer


def main():
  # `python -m` put the working directory first on sys.path, where horovodrun's own
  # script has its bin directory: a horovod/ or yaml.py there must not shadow Horovod's.
  if sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd():
    del sys.path[0]
  from horovod.runner import launch  # pylint: disable=g-import-not-at-top
  launch.mpi_built = lambda verbose=False: built("mpi")
  launch.gloo_built = lambda verbose=False: built("gloo")
  sys.argv[0] = "horovodrun"
  return launch.run_commandline()


if __name__ == "__main__":
  sys.exit(main())
