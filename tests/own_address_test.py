"""A task's servers on its own address: the address it binds to, and the preload library."""

import os
import subprocess

from absl import logging
import pytest

from estimator_dist import errors
from estimator_dist.contract import bind_address
from estimator_dist.contract import cluster
from estimator_dist.contract import env_vars
from estimator_dist.task import own_address
from estimator_dist.task import rank_address
from tests import helpers


def test_the_own_address_is_one_of_this_hosts():
  assert own_address.own_address(helpers.chief_at("127.0.0.1")) == ("127.0.0.1", None)
  assert own_address.own_address(helpers.chief_at("localhost")) == ("127.0.0.1", None)
  assert own_address.own_address(helpers.chief_at("192.0.2.1")) == (  # Documentation range.
      None, "192.0.2.1 resolves to no IPv4 address of this host")
  assert own_address.own_address(helpers.chief_at("no-such-host.invalid"))[0] is None
  # A name this host maps to loopback while a peer is elsewhere: binding loopback would
  # shut the peers out.
  task = cluster.task_in({"chief": ["localhost:2222"], "worker": ["192.0.2.1:2223"]},
                         "chief", 0, source="TF_CONFIG")
  assert own_address.own_address(task) == (None, (
      "localhost resolves to the loopback address 127.0.0.1 here, but the cluster has tasks "
      "on other hosts"))


def test_a_task_binds_once_and_only_where_it_can(monkeypatch, caplog):
  # Decided already (by the launcher, or by this task before): nothing happens.
  monkeypatch.setenv(env_vars.BIND_ADDRESS, "127.0.0.1")
  own_address.bind(helpers.chief_at("127.0.0.1"))
  monkeypatch.delenv(env_vars.BIND_ADDRESS)
  # An evaluator serves nothing; a name of another machine is left alone, and said so;
  # a program told not to start itself again (the suite's own process) never is.
  evaluator = cluster.task_in({"chief": ["127.0.0.1:2222"]}, "evaluator", 0,
                              source="TF_CONFIG")
  own_address.bind(evaluator)
  with caplog.at_level(logging.WARNING):
    own_address.bind(helpers.chief_at("192.0.2.1"))
    own_address.bind(helpers.chief_at("127.0.0.1"))
  assert ("chief:0 listens on every interface (TensorFlow binds it so): 192.0.2.1 resolves "
          "to no IPv4 address of this host. Name this host's own address in the cluster, or "
          "set ESTIMATOR_DIST_BIND_ADDRESS=0.0.0.0") in caplog.text
  assert ("listens on every interface (TensorFlow binds it so): ESTIMATOR_DIST_NO_RESTART=1 "
          "keeps it from starting itself again") in caplog.text


def test_only_the_switch_keeps_a_program_from_starting_itself_again(monkeypatch):
  # The suite's own process has it (conftest); the processes a test starts do not.
  assert os.environ.get(env_vars.NO_RESTART) == "1"
  assert env_vars.NO_RESTART not in helpers.child_env()
  monkeypatch.delenv(env_vars.NO_RESTART)
  assert own_address.restartable() is None
  monkeypatch.setenv(env_vars.NO_RESTART, "1")
  assert own_address.restartable() == (
      "ESTIMATOR_DIST_NO_RESTART=1 keeps it from starting itself again")


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
    env.pop(env_vars.BIND_ADDRESS)
  printed = subprocess.run([helpers.PYTHON, "-c", PROBE], env=env, capture_output=True,
                           text=True, check=True).stdout
  assert printed.split() == bound.split()


@pytest.mark.processes
@pytest.mark.parametrize("interface,bound", [
    ("lo", "127.0.0.1 ::ffff:127.0.0.1"),
    ("nosuchif0", "127.0.0.1 ::ffff:127.0.0.1"),  # No address there: loopback, never all.
])
def test_the_library_binds_to_the_address_of_the_interface_it_is_told(interface, bound):
  env = bind_address.interface_env({**helpers.child_env(), env_vars.BIND_ADDRESS: "0.0.0.0"},
                                   interface)
  if env is None:
    pytest.skip("no C compiler to build the preload library")
  assert env_vars.BIND_ADDRESS not in env
  printed = subprocess.run([helpers.PYTHON, "-c", PROBE], env=env, capture_output=True,
                           text=True, check=True).stdout
  assert printed.split() == bound.split()


def test_a_gloo_rank_across_hosts_needs_a_horovod_that_all_reduces_on_the_interface(
    monkeypatch, tmp_path):
  assert rank_address.interface_address("lo") == "127.0.0.1"
  assert rank_address.interface_address("nosuchif0") is None
  monkeypatch.setenv("HOROVOD_CONTROLLER", "gloo")
  monkeypatch.setenv("HOROVOD_GLOO_IFACE", "nosuchif0")
  with pytest.raises(errors.ConfigError, match=(
      r"the Horovod at .* runs Gloo's all-reduce on the address of this host's name \(.*\), "
      r"not on --network_interface=nosuchif0 \(None\), .* or use --horovod_controller=mpi")):
    rank_address.check_gloo_interface(str(tmp_path))
  library = tmp_path / "tensorflow" / "mpi_lib.cpython-311-x86_64-linux-gnu.so"
  library.parent.mkdir()
  library.write_bytes(b"")
  (tmp_path / "estimator_dist_fixes.txt").write_text("gloo-process-set-iface\n")
  rank_address.check_gloo_interface(str(tmp_path))  # Built with the fix.
  os.utime(library, (library.stat().st_mtime + 60,) * 2)  # Installed again since.
  with pytest.raises(errors.ConfigError):
    rank_address.check_gloo_interface(str(tmp_path))
  monkeypatch.setenv("HOROVOD_CONTROLLER", "mpi")
  rank_address.check_gloo_interface(str(tmp_path / "unfixed"))  # MPI carries no Gloo.


RANK = ("from absl import logging; logging.set_verbosity('info'); "
        "from estimator_dist.task import rank_address; rank_address.bind(); " + PROBE)


@pytest.mark.processes
def test_a_rank_without_the_launchers_library_starts_again_once_bound(tmp_path):
  """Another host: the launcher's copy of the library is not there, and this host's cache
  is a symbolic link (as a home linked to scratch is)."""
  (tmp_path / "real").mkdir()
  (tmp_path / "cache").symlink_to(tmp_path / "real")
  env = helpers.child_env(**{env_vars.CACHE: str(tmp_path / "cache"),
                             env_vars.BIND_INTERFACE: "lo",
                             "LD_PRELOAD": "/nowhere/estimator_dist_preload-x86_64-0.so"})
  done = subprocess.run([helpers.PYTHON, "-c", RANK], env=env, capture_output=True,
                        text=True, timeout=120, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split() == ["127.0.0.1", "::ffff:127.0.0.1"], done.stdout
  assert done.stderr.count("this rank starts its program again, its servers bound to lo "
                           "(127.0.0.1)") == 1, done.stderr[-3000:]


OWN = ("import sys; from absl import logging; logging.set_verbosity('info'); "
       "from estimator_dist.contract import preload; "
       "from estimator_dist.task import own_address; from tests import helpers; "
       "own_address.bind(helpers.chief_at(sys.argv[1])); print(preload.loaded()); " + PROBE)


@pytest.mark.processes
@pytest.mark.parametrize("host,chosen,said", [
    ("127.0.0.1", "0.0.0.0", ""),
    ("192.0.2.1", None, "chief:0 listens on every interface (TensorFlow binds it so): "
                        "192.0.2.1 resolves to no IPv4 address of this host."),
])
def test_a_task_left_on_every_interface_still_starts_again_with_the_library(
    host, chosen, said):
  """Kept on every interface by ESTIMATOR_DIST_BIND_ADDRESS=0.0.0.0, or named at an address
  not its own (NAT): the task starts again once with the library, which leaves its binds
  alone and keeps TensorFlow's request ids unique (contract/native/request_ids.c)."""
  env = helpers.child_env(**({env_vars.BIND_ADDRESS: chosen} if chosen else {}))
  done = subprocess.run([helpers.PYTHON, "-c", OWN, host], env=env, capture_output=True,
                        text=True, timeout=120, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split() == ["True", "0.0.0.0", "::"], done.stdout
  assert done.stderr.count("chief:0 starts its program again with the library that keeps "
                           "TensorFlow's request ids unique, its servers on 0.0.0.0") == 1, (
                               done.stderr[-3000:])
  assert done.stderr.count("listens on every interface") == (1 if said else 0), done.stderr
  assert said in done.stderr, done.stderr[-3000:]


@pytest.mark.processes
def test_a_task_whose_loader_dropped_the_library_does_not_start_again_for_it():
  """Started again with the library that the loader did not load (a setuid interpreter
  drops LD_PRELOAD): it says it goes without, and does not start again (for ever)."""
  env = helpers.child_env(**{env_vars.BIND_ADDRESS: "0.0.0.0"})
  dropped = ("import os; from estimator_dist.contract import env_vars; "
             "os.environ[env_vars.STARTED_AGAIN] = str(os.getpid()); " + OWN)
  done = subprocess.run([helpers.PYTHON, "-c", dropped, "127.0.0.1"], env=env,
                        capture_output=True, text=True, timeout=120, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split() == ["False", "0.0.0.0", "::"], done.stdout
  assert "starts its program again" not in done.stderr, done.stderr[-3000:]
  assert ("chief:0 goes without the library that keeps TensorFlow's request ids unique: it "
          "started again with the library, which the loader did not load") in done.stderr
