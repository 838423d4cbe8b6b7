"""A task's own port: another process on it is named; TensorFlow's bind failure too."""

import socket

import pytest
import tensorflow as tf

from estimator_dist import errors
from estimator_dist.supervision import local_cluster
from estimator_dist.task import own_port
from tests import helpers


def grpc_failure():
  return tf.errors.UnknownError(None, None, "Could not start gRPC server")


def test_a_port_another_process_listens_on_is_named():
  with socket.socket() as squatter:
    squatter.bind(("127.0.0.1", 0))
    squatter.listen(1)
    port = squatter.getsockname()[1]
    with pytest.raises(errors.PortInUse, match=(
        f"chief:0 cannot listen on 127.0.0.1:{port}: another process holds port {port}.")):
      own_port.check_free(helpers.chief_at(port=port))
    with pytest.raises(errors.PortInUse):
      with own_port.named(helpers.chief_at(port=port)):
        raise grpc_failure()
    # A client serves nothing.
    own_port.check_free(helpers.chief_at(port=port, source="remote_cluster"))


def test_a_free_port_passes_and_tensorflows_own_error_stays_when_the_port_is_free():
  port = local_cluster.free_ports(1)[0]
  own_port.check_free(helpers.chief_at(port=port))
  with pytest.raises(tf.errors.UnknownError):
    with own_port.named(helpers.chief_at(port=port)):
      raise grpc_failure()
