"""A task's servers on its own address: the address it binds to, and the preload library."""

import subprocess

from absl import logging
import pytest

from estimator_dist.task import bind_address
from estimator_dist.task import cluster
from estimator_dist.task import own_address
from tests import helpers


def chief_at(host):
  return cluster.task_in({"chief": [f"{host}:2222"], "worker": ["127.0.0.1:2223"]}, "chief",
                         0, source="TF_CONFIG")


def test_the_own_address_is_one_of_this_hosts():
  assert own_address.own_address(chief_at("127.0.0.1")) == ("127.0.0.1", None)
  assert own_address.own_address(chief_at("localhost")) == ("127.0.0.1", None)
  assert own_address.own_address(chief_at("192.0.2.1")) == (  # Documentation range.
      None, "192.0.2.1 resolves to no IPv4 address of this host")
  assert own_address.own_address(chief_at("no-such-host.invalid"))[0] is None
  # A name this host maps to loopback while a peer is elsewhere: binding loopback would
  # shut the peers out.
  task = cluster.task_in({"chief": ["localhost:2222"], "worker": ["192.0.2.1:2223"]},
                         "chief", 0, source="TF_CONFIG")
  assert own_address.own_address(task) == (None, (
      "localhost resolves to the loopback address 127.0.0.1 here, but the cluster has tasks "
      "on other hosts"))


def test_a_task_binds_once_and_only_where_it_can(monkeypatch, caplog):
  # Decided already (by the launcher, or by this task before): nothing happens.
  monkeypatch.setenv(bind_address.BIND_ENV, "127.0.0.1")
  own_address.bind(chief_at("127.0.0.1"))
  monkeypatch.delenv(bind_address.BIND_ENV)
  # An evaluator serves nothing; a name of another machine is left alone, and said so;
  # a program that cannot start again as it was (here: pytest) is never restarted.
  evaluator = cluster.task_in({"chief": ["127.0.0.1:2222"]}, "evaluator", 0,
                              source="TF_CONFIG")
  own_address.bind(evaluator)
  with caplog.at_level(logging.WARNING):
    own_address.bind(chief_at("192.0.2.1"))
    own_address.bind(chief_at("127.0.0.1"))
  assert ("chief:0 listens on every interface (TensorFlow binds it so): 192.0.2.1 resolves "
          "to no IPv4 address of this host. Name this host's own address in the cluster, or "
          "set ESTIMATOR_DIST_BIND_ADDRESS=0.0.0.0") in caplog.text
  assert "listens on every interface (TensorFlow binds it so): it runs under pytest" in (
      caplog.text)


PROBE = ("import socket; s = socket.socket(); s.bind(('', 0)); "
         "t = socket.socket(socket.AF_INET6); t.bind(('::', 0)); "
         "print(s.getsockname()[0], t.getsockname()[0])")


@pytest.mark.processes
@pytest.mark.parametrize("address,bound", [
    ("127.0.0.2", "127.0.0.2 ::ffff:127.0.0.2"),
    (None, "127.0.0.1 ::ffff:127.0.0.1"),
    ("0.0.0.0", "0.0.0.0 ::"),
])
def test_the_library_turns_binds_to_every_interface_into_binds_to_the_address(address, bound):
  env = bind_address.bound_env(helpers.child_env(), address or "")
  if env is None:
    pytest.skip("no C compiler to build the preload library")
  if address is None:
    env.pop(bind_address.BIND_ENV)
  printed = subprocess.run([helpers.PYTHON, "-c", PROBE], env=env, capture_output=True,
                           text=True, check=True).stdout
  assert printed.split() == bound.split()
