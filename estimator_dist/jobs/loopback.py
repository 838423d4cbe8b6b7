"""Keeps a local job on the loopback interface.

TensorFlow 2.15's gRPC server listens on every interface whatever host its TF_CONFIG
names, and so do horovodrun's services and MPI's daemons. The launcher preloads a
small library (native/bind_loopback.c, built once with the C compiler) into every
process of a local job; it turns a bind to every interface into a bind to loopback.
The launcher does this; a test checks every listening socket of each kind of job.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile

from absl import logging

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native",
                       "bind_loopback.c")
CACHE_ENV = "ESTIMATOR_DIST_CACHE"


def _cache_dir():
  return os.environ.get(CACHE_ENV) or os.path.join(
      os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "estimator_dist")


def library():
  """The path of the preload library, built if needed; None without a C compiler."""
  with open(_SOURCE, "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()[:16]
  path = os.path.join(_cache_dir(), f"bind_loopback-{digest}.so")
  if os.path.exists(path):
    return path
  compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
  if not compiler:
    logging.warning("estimator_dist: no C compiler, so the servers of this local job listen "
                    "on every interface (TensorFlow binds them so); install gcc to keep them "
                    "on 127.0.0.1.")
    return None
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as build:
    built = os.path.join(build, "bind_loopback.so")
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", built, _SOURCE, "-ldl"],
                   check=True, capture_output=True)
    os.replace(built, path)  # Atomic: tasks starting together never see half a file.
  return path


def local_only_env(env):
  """`env` for a process of a local job: the library preloaded, libfabric on shared memory.

  Open MPI's libfabric transport otherwise binds the machine's network interfaces by
  their addresses, which the library leaves alone.
  """
  env = {"FI_PROVIDER": "shm", **env}
  path = library()
  if path is None:
    return env
  preloaded = [p for p in env.get("LD_PRELOAD", "").split(":") if p]
  return {**env, "LD_PRELOAD": ":".join([path] + preloaded)}
