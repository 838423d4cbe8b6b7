"""The port a task listens on: when another process holds it, the task says which.

The launcher picks free ports, but on the host network another process may take one
before the task listens on it (in a private job network no other process can). The task
then ends with `errors.PORT_IN_USE_EXIT_CODE` and a message naming the port, before it
serves or contacts a peer, and the launcher starts the job again on new ports. TensorFlow's own failure to bind (`Could not start gRPC server`, which
names no port) is turned into the same error.
"""

import contextlib
import errno
import socket

import tensorflow as tf

from estimator_dist import errors


def listens(task):
  """Whether `task` runs a server on its own address (chief, worker and ps of a cluster;
  not a standalone client, whose cluster is remote)."""
  return (bool(task.cluster) and task.role != "evaluator" and task.role in task.cluster and
          task.source != "remote_cluster")


def _address(task):
  return task.cluster[task.role][task.index]


def in_use(task):
  address = _address(task)
  return errors.PortInUse(
      f"{task.role}:{task.index} cannot listen on {address}: another process holds port "
      f"{address.rpartition(':')[2]}. A job started by `estimator-dist launch` starts again "
      f"on new ports; otherwise free the port or give the task another one in TF_CONFIG.")


def check_free(task):
  """Raises PortInUse when another process listens on this task's port.

  TensorFlow listens on every interface, so any listener on the port is in the way. A
  port in TIME_WAIT is free (TensorFlow sets SO_REUSEADDR too).
  """
  if not listens(task):
    return
  port = int(_address(task).rpartition(":")[2])
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
      s.bind(("0.0.0.0", port))
      s.listen(1)
    except OSError as e:
      if e.errno == errno.EADDRINUSE:
        raise in_use(task) from None
      raise


@contextlib.contextmanager
def named(task):
  """Turns TensorFlow's failure to start this task's server into PortInUse, when another
  process does hold the port (a bad address, say, stays TensorFlow's error)."""
  try:
    yield
  except tf.errors.UnknownError as e:
    if listens(task) and "Could not start gRPC server" in str(e):
      check_free(task)
    raise
