"""A task's servers listen on the address its cluster names for it, not on every interface.

TensorFlow 2.15 binds its gRPC server to 0.0.0.0 whatever TF_CONFIG says, so a task
started by hand, by srun or by Spark would take connections on every network its host
has. Before it serves, such a task starts its program again (the same process, `execve`)
with the preload library of `bind_address` told its own address. The launcher's tasks
have it already; `env_vars.BIND_ADDRESS` set to 0.0.0.0 keeps TensorFlow's binds, and
`env_vars.NO_RESTART` set to 1 keeps this process from starting itself again (the test
suite's own process sets it). A Horovod rank of a job across hosts does the same with the
interface the launcher names (`bind_interface`).
"""

import fcntl
import multiprocessing
import os
import socket
import struct
import sys

from absl import logging

from estimator_dist import errors
from estimator_dist.task import bind_address
from estimator_dist.task import env_vars
from estimator_dist.task import own_port

_SIOCGIFADDR = 0x8915


def is_mine(address):
  """Whether `address` is an address of this host (a socket can bind to it)."""
  with socket.socket() as probe:
    try:
      probe.bind((address, 0))
    except OSError:
      return False
  return True


def _host(address):
  return address.rpartition(":")[0].strip("[]")


def _resolve(host):
  try:
    return {info[4][0] for info in socket.getaddrinfo(host, None, socket.AF_INET)}
  except socket.gaierror:
    return set()


def own_address(task):
  """(the IPv4 address of this host that the cluster names for `task`, or None; why not).

  None where the name resolves to no address of this host (NAT), to several, or to a
  loopback address while other tasks are on other hosts (a hostname that /etc/hosts maps
  to 127.0.1.1 while the peers reach it through DNS).
  """
  host = _host(task.cluster[task.role][task.index])
  mine = sorted(filter(is_mine, _resolve(host)))
  if len(mine) != 1:
    return None, (f"{host} resolves to {'no' if not mine else 'more than one'} IPv4 "
                  f"address of this host{' (' + ', '.join(mine) + ')' if mine else ''}")
  others = {_host(a) for addresses in task.cluster.values() for a in addresses}
  if mine[0].startswith("127.") and any(
      not address.startswith("127.") for other in others for address in _resolve(other)):
    return None, (f"{host} resolves to the loopback address {mine[0]} here, but the "
                  "cluster has tasks on other hosts")
  return mine[0], None


def _restartable():
  """Why this program cannot be started again as it was, or None."""
  if sys.argv[0] in ("", "-", "-c") and "-c" not in sys.orig_argv:
    return "it was read from stdin"
  if hasattr(sys, "ps1") or sys.flags.interactive or "ipykernel" in sys.modules:
    return "it is an interactive session"
  if os.environ.get(env_vars.NO_RESTART) == "1":
    return f"{env_vars.NO_RESTART}=1 keeps it from starting itself again"
  if multiprocessing.parent_process() is not None:
    return "it is a multiprocessing child"
  return None


def bind(task):
  """Restarts this program with its binds going to the task's own address; returns only
  where that is already so, not needed, or not possible (then says why)."""
  if env_vars.BIND_ADDRESS in os.environ or not own_port.listens(task):
    return
  name = f"{task.role}:{task.index}"
  address, why_not = own_address(task)
  why_not = why_not or _restartable()
  env = None if why_not else bind_address.bound_env(os.environ, address)
  if env is None:
    if why_not:
      logging.warning("estimator_dist: %s listens on every interface (TensorFlow binds it "
                      "so): %s. Name this host's own address in the cluster, or set %s=0.0.0.0 "
                      "to keep every interface and silence this.", name, why_not,
                      env_vars.BIND_ADDRESS)
    return
  _restart(env, f"{name} starts its program again, its servers bound to {address} "
                f"({task.cluster[task.role][task.index]}), not to every interface")


def _restart(env, why):
  logging.info("estimator_dist: %s; what ran before this runs again.", why)
  sys.stdout.flush()
  sys.stderr.flush()
  os.execve(sys.executable, sys.orig_argv, env)


def interface_address(name):
  """The IPv4 address interface `name` has on this host, or None."""
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
    try:
      packed = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
    except OSError:
      return None
  return socket.inet_ntoa(packed[20:24])


def bind_interface(*, horovod_dir):
  """A Horovod rank of a job across hosts (`env_vars.BIND_INTERFACE`, the launcher's
  --network_interface): checks that this host has that interface and that the Horovod in
  `horovod_dir` all-reduces on it, and starts this program again with this host's preload
  library where the launcher's is not here (another host, no shared home), so its
  servers listen on that interface only."""
  interface = os.environ.get(env_vars.BIND_INTERFACE)
  if not interface or env_vars.BIND_ADDRESS in os.environ:
    return
  address = interface_address(interface)
  if address is None:
    raise errors.ConfigError(
        f"--network_interface={interface} has no IPv4 address on host {socket.gethostname()}"
        f": name the interface of the private network every host of the job has (`ip -br "
        f"addr` lists them), under the same name on each.")
  check_gloo_interface(horovod_dir)
  if bind_address.loaded():
    return
  why_not = _restartable()
  env = None if why_not else bind_address.interface_env(os.environ, interface)
  if env is None:
    logging.warning("estimator_dist: this rank's servers listen on every interface of host %s,"
                    " not only %s: %s.", socket.gethostname(), interface,
                    why_not or "the preload library cannot be built here")
    return
  _restart(env, f"this rank starts its program again, its servers bound to {interface} "
                f"({address}), not to every interface")


def check_gloo_interface(horovod_dir):
  """Refuses a Gloo rank across hosts where the Horovod in `horovod_dir` would all-reduce
  off the interface the job names: Horovod 0.28.1 as published makes its process sets'
  Gloo contexts on the address of the host's name (scripts/fix_horovod_gloo_iface.py,
  which `make setup` applies, says more)."""
  interface = os.environ.get("HOROVOD_GLOO_IFACE")
  if os.environ.get("HOROVOD_CONTROLLER") != "gloo" or interface in (None, "lo") or (
      os.path.exists(os.path.join(horovod_dir, "estimator_dist_fixes.txt"))):
    return
  address = interface_address(interface)
  try:
    named = socket.gethostbyname(socket.gethostname())
  except OSError:
    named = None
  if named != address:
    raise errors.ConfigError(
        f"the Horovod at {horovod_dir} runs Gloo's all-reduce on the address of this host's "
        f"name ({named}), not on --network_interface={interface} ({address}), so ranks on "
        f"other hosts cannot reach it or reach it on another network. Build Horovod with "
        f"estimator_dist's fix (`make setup`, or scripts/fix_horovod_gloo_iface.py on its "
        f"source), or use --horovod_controller=mpi.")
