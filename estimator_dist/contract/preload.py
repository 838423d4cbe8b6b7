"""The library preloaded into every process of a job, built once with the C compiler from
the sources in native/:

- bind_address.c keeps the job's servers on the job's own address (`bind_address` gives the
  variables it reads);
- request_ids.c gives TensorFlow's requests ids that never repeat within a process (and
  across processes by a 64-bit chance). TensorFlow 2.15's own repeat within a long job of
  several processes, whose task then stops on "The same RunGraph (Worker) request was
  received twice" (measured: after 24,000 to 85,000 steps of a gRPC session).

The launcher preloads it into every process of a local job (`bind_address.local_only_env`)
and horovodrun's across hosts; a task started by hand, by srun or by Spark starts its
program again with it (`task.own_address`, `task.rank_address`).
"""

import glob
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile

from estimator_dist.contract import env_vars
from estimator_dist.contract import user_cache

# The standard library's logger, not absl's: the contract imports only the standard
# library. A program that runs absl's app shows its lines in absl's format.
_logger = logging.getLogger(__name__)

_SOURCES = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "native", "*.c")))
_PREFIX = "estimator_dist_preload-"
_SAID = set()  # Why the library cannot be built, said once per process.


def library():
  """The path of the preload library, built if needed; None (said why) where it cannot be."""
  path, why_not = build()
  if path is None and why_not not in _SAID:
    _SAID.add(why_not)
    _logger.warning("estimator-dist: the library preloaded into this job's processes cannot "
                    "be built, so its servers listen on every interface (TensorFlow binds "
                    "them so) and a long multi_worker or parameter_server job may stop on "
                    "a request id TensorFlow repeats: %s.", why_not)
  return path


def build():
  """(the path of the preload library, built if needed, None; why it cannot be built).

  `make setup` calls it once, so that no job needs a C compiler; the launcher, to refuse
  a job on the host network whose servers would listen on every interface.
  """
  digest = hashlib.sha256()
  for source in _SOURCES:
    with open(source, "rb") as f:
      digest.update(f.read())
  path = os.path.join(user_cache.directory(),
                      f"{_PREFIX}{platform.machine()}-{digest.hexdigest()[:16]}.so")
  if os.path.exists(path):
    return path, None
  compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
  why_not = None if compiler else "there is no C compiler (install gcc)"
  if compiler:
    try:
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as scratch:
        built = os.path.join(scratch, "preload.so")
        subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", built, *_SOURCES, "-ldl"],
                       check=True, capture_output=True, text=True)
        os.replace(built, path)  # Atomic: tasks starting together never see half a file.
      return path, None
    except subprocess.CalledProcessError as e:
      why_not = f"{compiler} could not build {' '.join(_SOURCES)}: {e.stderr.strip()[-500:]}"
    except OSError as e:
      why_not = (f"it cannot be written to {os.path.dirname(path)} ({e}); set "
                 f"{env_vars.CACHE} to a writable directory")
  return None, why_not


def preloaded(env):
  """`env` with this host's preload library first in LD_PRELOAD (and none of another
  host's or version's), and libfabric on shared memory; None without a C compiler.

  Open MPI's libfabric transport binds each network interface by its own address, which
  the library leaves alone; the MPI that Horovod runs carries nothing over it (pml ob1:
  TCP between hosts, shared memory within one).
  """
  path = library()
  if path is None:
    return None
  kept = [p for p in env.get("LD_PRELOAD", "").split(":")
          if p and not os.path.basename(p).startswith(_PREFIX)]
  return {"FI_PROVIDER": "shm", **env, "LD_PRELOAD": ":".join([path] + kept)}


def loaded():
  """Whether this process runs with this host's preload library (maps names the file
  with its symbolic links resolved)."""
  path = library()
  with open("/proc/self/maps") as f:
    return path is not None and os.path.realpath(path) in f.read()
