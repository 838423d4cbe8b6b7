"""A task's servers listen on the address its cluster names for it, not on every interface.

TensorFlow 2.15 binds its gRPC server to 0.0.0.0 whatever TF_CONFIG says, so a task
started by hand, by srun or by Spark would take connections on every network its host
has. Before it serves, such a task starts its program again (the same process, `execve`)
with the preload library (`contract/preload.py`) told its own address; the library also
keeps TensorFlow's request ids from repeating. The launcher's tasks have it already;
`env_vars.BIND_ADDRESS` set to 0.0.0.0 keeps TensorFlow's binds (the task still starts
again with the library), and `env_vars.NO_RESTART` set to 1 keeps this process from
starting itself again (the test suite's own process sets it). A Horovod rank does the same
in `rank_address`.
"""

import multiprocessing
import os
import socket
import sys

from absl import logging

from estimator_dist import command_line
from estimator_dist.contract import bind_address
from estimator_dist.contract import env_vars
from estimator_dist.contract import preload
from estimator_dist.task import own_port



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
  return address_of(_host(task.cluster[task.role][task.index]),
                    others={_host(a) for addresses in task.cluster.values() for a in addresses})


def address_of(host, *, others):
  """(the IPv4 address of this host that name `host` resolves to, or None; why not), for a
  job whose other hosts are named `others`; see `own_address`."""
  mine = sorted(filter(is_mine, _resolve(host)))
  if len(mine) != 1:
    return None, (f"{host} resolves to {'no' if not mine else 'more than one'} IPv4 "
                  f"address of this host{' (' + ', '.join(mine) + ')' if mine else ''}")
  if mine[0].startswith("127.") and any(
      not address.startswith("127.") for other in others for address in _resolve(other)):
    return None, (f"{host} resolves to the loopback address {mine[0]} here, but the "
                  "cluster has tasks on other hosts")
  return mine[0], None


def restartable():
  """Why this program cannot be started again as it was, or None."""
  if sys.argv[0] in ("", "-", "-c") and "-c" not in sys.orig_argv:
    return "it was read from stdin"
  if hasattr(sys, "ps1") or sys.flags.interactive or "ipykernel" in sys.modules:
    return "it is an interactive session"
  if os.environ.get(env_vars.NO_RESTART) == "1":
    return f"{env_vars.NO_RESTART}=1 keeps it from starting itself again"
  if os.environ.get(env_vars.STARTED_AGAIN) == str(os.getpid()):
    return ("it started again with the library, which the loader did not load (a setuid "
            "or setcap interpreter drops LD_PRELOAD)")
  if multiprocessing.parent_process() is not None:
    return "it is a multiprocessing child"
  return None


def bind(task):
  """Starts this program again with the preload library (`contract/preload.py`), its binds
  going to the task's own address (left on every interface where that cannot be known,
  then said why); returns where the library is in this process already or not needed,
  and where it cannot be (then says why)."""
  if not own_port.listens(task) or preload.loaded():
    return
  name = task.name
  chosen = os.environ.get(env_vars.BIND_ADDRESS)  # The user's (0.0.0.0), or decided before.
  address, why_not = (chosen, None) if chosen is not None else own_address(task)
  cannot_restart = restartable()
  if chosen is None and (why_not or cannot_restart):
    logging.warning(command_line.line("%s listens on every interface (TensorFlow binds it "
                                      "so): %s. Name this host's own address in the "
                                      "cluster, or set %s=0.0.0.0 to keep every interface "
                                      "and silence this."), name, why_not or cannot_restart,
                    env_vars.BIND_ADDRESS)
  elif cannot_restart:
    logging.warning(command_line.line("%s goes without the library that keeps TensorFlow's "
                                      "request ids unique: %s."), name, cannot_restart)
  if cannot_restart:
    return
  env = bind_address.bound_env(os.environ, address or "0.0.0.0")
  if env is None:  # No C compiler: `preload.library` said so.
    return
  if chosen is None and address:
    restart(env, f"{name} starts its program again, its servers bound to {address} "
                 f"({task.cluster[task.role][task.index]}), not to every interface")
  else:
    restart(env, f"{name} starts its program again with the library that keeps "
                 f"TensorFlow's request ids unique, its servers on {address or '0.0.0.0'}")


def restart(env, why):
  logging.info(command_line.line("%s; what ran before this runs again."), why)
  sys.stdout.flush()
  sys.stderr.flush()
  os.execve(sys.executable, sys.orig_argv, {**env, env_vars.STARTED_AGAIN: str(os.getpid())})
