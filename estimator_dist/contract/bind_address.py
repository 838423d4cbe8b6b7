"""Keeps a job's servers on the job's own address.

TensorFlow 2.15's gRPC server listens on every interface whatever host its TF_CONFIG
names, and so do horovodrun's services and MPI's daemons. The preload library (`preload`,
native/bind_address.c) turns a process's binds to every interface into binds to the
address in `env_vars.BIND_ADDRESS` (0.0.0.0 leaves them alone). The launcher preloads it
into every process of a local job (127.0.0.1); a task started by hand, by srun or by Spark
preloads it itself with the address its cluster names (`task.own_address`). Tests check
every listening socket of each kind of job, on loopback and across test hosts.
"""

from estimator_dist.contract import env_vars
from estimator_dist.contract import preload


def bound_env(env, address):
  """`env` for a process whose binds to every interface go to `address`; None without a
  C compiler."""
  env = preload.preloaded(env)
  return env and {**env, env_vars.BIND_ADDRESS: address}


def interface_env(env, interface):
  """`env` for the processes of a job across hosts: on each host, their binds to every
  interface go to the address `interface` has there; None without a C compiler."""
  env = preload.preloaded(env)
  if env is None:
    return None
  env = {**env, env_vars.BIND_INTERFACE: interface}
  env.pop(env_vars.BIND_ADDRESS, None)
  return env


def local_only_env(env):
  """`env` for a process of a local job: its servers on 127.0.0.1."""
  return bound_env(env, "127.0.0.1") or env
