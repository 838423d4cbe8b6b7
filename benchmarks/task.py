"""Who this benchmarked process is, from what its launcher set."""

import json
import os


def name():
  """'chief-0', 'worker-1', 'rank-1' or 'local-<pid>': unique within one run."""
  tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task")
  if tf_config:
    return f"{tf_config['type']}-{tf_config['index']}"
  for variable in ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK"):
    if variable in os.environ:
      return f"rank-{os.environ[variable]}"
  return f"local-{os.getpid()}"
