"""Keeps a job's servers on the job's own address.

TensorFlow 2.15's gRPC server listens on every interface whatever host its TF_CONFIG
names, and so do horovodrun's services and MPI's daemons. A small library
(native/bind_address.c, built once with the C compiler), preloaded into a process, turns
its binds to every interface into binds to the address in `env_vars.BIND_ADDRESS` (0.0.0.0
leaves them alone). The launcher preloads it into every process of a local job
(127.0.0.1); a task started by hand, by srun or by Spark preloads it itself with the
address its cluster names (`task.own_address`). Tests
check every listening socket of each kind of job, on loopback and across test hosts.
"""

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

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native",
                       "bind_address.c")


def library():
  """The path of the preload library, built if needed; None (said why) where it cannot be."""
  path, why_not = build()
  if path is None:
    _logger.warning("estimator-dist: the library that keeps this job's servers on its own "
                    "address cannot be built, so they listen on every interface (TensorFlow "
                    "binds them so): %s.", why_not)
  return path


def build():
  """(the path of the preload library, built if needed, None; why it cannot be built).

  `make setup` calls it once, so that no job needs a C compiler; the launcher, to refuse
  a job on the host network whose servers would listen on every interface.
  """
  with open(_SOURCE, "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()[:16]
  path = os.path.join(user_cache.directory(), f"bind_address-{platform.machine()}-{digest}.so")
  if os.path.exists(path):
    return path, None
  compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
  why_not = None if compiler else "there is no C compiler (install gcc)"
  if compiler:
    try:
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as scratch:
        built = os.path.join(scratch, "bind_address.so")
        subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", built, _SOURCE, "-ldl"],
                       check=True, capture_output=True, text=True)
        os.replace(built, path)  # Atomic: tasks starting together never see half a file.
      return path, None
    except subprocess.CalledProcessError as e:
      why_not = f"{compiler} could not build {_SOURCE}: {e.stderr.strip()[-500:]}"
    except OSError as e:
      why_not = (f"it cannot be written to {os.path.dirname(path)} ({e}); set "
                 f"{env_vars.CACHE} to a writable directory")
  return None, why_not


def _preloaded(env):
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
          if p and not os.path.basename(p).startswith("bind_address-")]
  return {"FI_PROVIDER": "shm", **env, "LD_PRELOAD": ":".join([path] + kept)}


def bound_env(env, address):
  """`env` for a process whose binds to every interface go to `address`; None without a
  C compiler."""
  env = _preloaded(env)
  return env and {**env, env_vars.BIND_ADDRESS: address}


def interface_env(env, interface):
  """`env` for the processes of a job across hosts: on each host, their binds to every
  interface go to the address `interface` has there; None without a C compiler."""
  env = _preloaded(env)
  if env is None:
    return None
  env = {**env, env_vars.BIND_INTERFACE: interface}
  env.pop(env_vars.BIND_ADDRESS, None)
  return env


def loaded():
  """Whether this process runs with this host's preload library (maps names the file
  with its symbolic links resolved)."""
  path = library()
  with open("/proc/self/maps") as f:
    return path is not None and os.path.realpath(path) in f.read()


def local_only_env(env):
  """`env` for a process of a local job: its servers on 127.0.0.1."""
  return bound_env(env, "127.0.0.1") or env
