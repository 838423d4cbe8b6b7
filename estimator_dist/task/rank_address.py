"""A Horovod rank's servers listen on the job's network, not on every interface.

Gloo and MPI bind their listeners to every interface. A rank started by the launcher on
several hosts is told the interface of their private network (`env_vars.BIND_INTERFACE`,
its --network_interface): the preload library of `bind_address` takes that interface's
address on each host. A rank of an srun step binds to the address its node's name
resolves to, as a tf.distribute task does (`own_address`), and tells MPI to use only that
address. Either way a rank whose process lacks the library starts its program again
(`execve`) with it.
"""

import fcntl
import glob
import importlib.util
import os
import socket
import struct

from absl import logging

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import bind_address
from estimator_dist.contract import env_vars
from estimator_dist.contract import preload
from estimator_dist.contract import slurm_env
from estimator_dist.task import own_address

_SIOCGIFADDR = 0x8915


def interface_address(name):
  """The IPv4 address interface `name` has on this host, or None."""
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
    try:
      packed = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
    except OSError:
      return None
  return socket.inet_ntoa(packed[20:24])


def bind():
  """Starts this rank's program again bound to the job's network where it is not yet;
  returns where that is so, not needed, or not possible (then says why). Called before
  Horovod is imported: a socket its import makes would outlive `execve`, unbound."""
  if env_vars.BIND_ADDRESS in os.environ:
    return
  interface = os.environ.get(env_vars.BIND_INTERFACE)
  if interface:
    _bind_interface(interface)
  elif os.environ.get("SLURMD_NODENAME") and os.environ.get("SLURM_STEP_NODELIST"):
    _bind_node(os.environ["SLURMD_NODENAME"],
               slurm_env.expand_hostlist(os.environ["SLURM_STEP_NODELIST"]))


def _bind_interface(interface):
  address = interface_address(interface)
  if address is None:
    raise errors.ConfigError(
        f"--network_interface={interface} has no IPv4 address on host {socket.gethostname()}"
        f": name the interface of the private network every host of the job has (`ip -br "
        f"addr` lists them), under the same name on each.")
  spec = importlib.util.find_spec("horovod")
  if spec and spec.submodule_search_locations:
    check_gloo_interface(spec.submodule_search_locations[0])
  if preload.loaded():
    return
  # Started again with the address itself: it does not start itself a second time.
  _restart(bind_address.bound_env(os.environ, address), f"{interface} ({address})")


def _bind_node(node, nodes):
  address, why_not = own_address.address_of(node, others=nodes)
  if address is None:
    logging.warning(command_line.line("this rank's servers listen on every interface of node "
                                      "%s: %s. Give the node a name that resolves to its own "
                                      "address."), node, why_not)
    return
  env = bind_address.bound_env(os.environ, address)
  if env is not None:  # MPI's TCP transport offers its peers only that address.
    env = {"OMPI_MCA_btl_tcp_if_include": f"{address}/32",
           "OMPI_MCA_oob_tcp_if_include": f"{address}/32", **env}
  _restart(env, address)


def _restart(env, where):
  why_not = own_address.restartable() or (
      "the preload library cannot be built here" if env is None else None)
  if why_not:
    logging.warning(command_line.line("this rank's servers listen on every interface of host "
                                      "%s, not only %s: %s."), socket.gethostname(), where, why_not)
    return
  own_address.restart(env, f"this rank starts its program again, its servers bound to "
                           f"{where}, not to every interface")


def check_gloo_interface(horovod_dir):
  """Refuses a Gloo rank across hosts where the Horovod in `horovod_dir` would all-reduce
  off the interface the job names: Horovod 0.28.1 as published makes its process sets'
  Gloo contexts on the address of the host's name (scripts/fix_horovod_gloo_iface.py,
  which `make setup` applies, says more)."""
  interface = os.environ.get("HOROVOD_GLOO_IFACE")
  if os.environ.get("HOROVOD_CONTROLLER") != "gloo" or interface in (None, "lo") or (
      horovod_fixed(horovod_dir)):
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


def horovod_fixed(horovod_dir):
  """Whether the Horovod in `horovod_dir` was built with scripts/fix_horovod_gloo_iface.py:
  `make setup` writes the marker after it builds, so a Horovod installed since (its
  libraries newer) is not."""
  marker = os.path.join(horovod_dir, "estimator_dist_fixes.txt")
  libraries = glob.glob(os.path.join(horovod_dir, "tensorflow", "mpi_lib*.so"))
  return os.path.exists(marker) and all(
      os.path.getmtime(marker) >= os.path.getmtime(path) for path in libraries)
