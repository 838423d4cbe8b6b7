"""A standard TensorFlow server for the standalone client mode.

  TF_CONFIG='{"cluster": {"worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]},
              "task": {"type": "worker", "index": 0}}' python -m estimator_dist.jobs.server

It serves its task (at the address its cluster names for it) until it is stopped; a client
started with --remote_cluster (the same cluster) drives the training. The servers do not
know when a client is done, so the user or the cluster manager stops them.
"""

import sys

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.contract import environment
from estimator_dist.task import own_address


def main():
  try:
    task = environment.task_from_environment()
    if not task.cluster or task.source != "TF_CONFIG":
      raise errors.ConfigError("set TF_CONFIG to the server's cluster and task, e.g. "
                               f"{cluster_lib.TF_CONFIG_EXAMPLE}")
  except errors.ConfigError as e:
    command_line.write_error(str(e))
    return 2
  own_address.bind(task)  # Serves at the address its cluster names, not every interface.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  server = tf.distribute.Server(tf.train.ClusterSpec(dict(task.cluster)), job_name=task.role,
                                task_index=task.index, protocol="grpc", start=True)
  print(command_line.line(f"{task.role}:{task.index} serving at {server.target}"), flush=True)
  server.join()
  return 0


if __name__ == "__main__":
  sys.exit(main())
