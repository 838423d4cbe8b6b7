"""The cluster of a job on this machine: free ports of one host, one per task.

  from estimator_dist.supervision import local_cluster
  cluster = local_cluster.local_cluster(job)  # {"chief": ("127.0.0.1:40001",), ...}

The local launcher gives every task of a tf.distribute job its own port; Spark's tasks
pick one each on their executor. A port is free when chosen, not reserved: another
process may take it before the task listens, which the launcher answers by starting the
job again on new ports.
"""

import socket


def free_ports(count, *, host="127.0.0.1"):
  """`count` distinct ports free on `host` (held open together while chosen)."""
  sockets = []
  try:
    for _ in range(count):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.bind((host, 0))
      sockets.append(s)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def local_cluster(job, *, host="127.0.0.1"):
  """The cluster of a local tf.distribute job (a JobSpec): chief, workers, ps and
  evaluator, each at a free port of `host`."""
  ports = iter(free_ports(sum(n for _, n in job.cluster_roles), host=host))
  return {role: tuple(f"{host}:{next(ports)}" for _ in range(n))
          for role, n in job.cluster_roles if n}
