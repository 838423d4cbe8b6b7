"""A task's servers listen on the address its cluster names for it, not on every interface.

TensorFlow 2.15 binds its gRPC server to 0.0.0.0 whatever TF_CONFIG says, so a task
started by hand, by srun or by Spark would take connections on every network its host
has. Before it serves, such a task starts its program again (the same process, `execve`)
with the preload library of `bind_address` told its own address. The launcher's tasks
have it already; `ESTIMATOR_DIST_BIND_ADDRESS=0.0.0.0` keeps TensorFlow's binds.
"""

import os
import socket
import sys

from absl import logging

from estimator_dist.task import bind_address
from estimator_dist.task import own_port


def is_mine(address):
  """Whether `address` is an address of this host (a socket can bind to it)."""
  with socket.socket() as probe:
    try:
      probe.bind((address, 0))
    except OSError:
      return False
  return True


def own_address(task):
  """The IPv4 address of this host that the cluster names for `task`, or None (a name
  that does not resolve to one of this host's addresses)."""
  host = task.cluster[task.role][task.index].rpartition(":")[0].strip("[]")
  try:
    resolved = {info[4][0] for info in socket.getaddrinfo(host, None, socket.AF_INET)}
  except socket.gaierror:
    return None
  mine = sorted(filter(is_mine, resolved))
  return mine[0] if mine else None


def bind(task):
  """Restarts this program with its binds going to the task's own address; returns only
  where that is already so, not needed, or not possible (then says why)."""
  if bind_address.BIND_ENV in os.environ or not own_port.listens(task):
    return
  address = own_address(task)
  host = task.cluster[task.role][task.index]
  if address is None:
    logging.warning("estimator_dist: %s:%d listens on every interface: %s does not resolve "
                    "to an IPv4 address of this host.", task.role, task.index, host)
    return
  env = bind_address.bound_env(os.environ, address)
  if env is None:
    return
  logging.info("estimator_dist: %s:%d starts again with its servers bound to %s (%s), not "
               "to every interface.", task.role, task.index, address, host)
  sys.stdout.flush()
  sys.stderr.flush()
  os.execve(sys.executable, sys.orig_argv, env)
