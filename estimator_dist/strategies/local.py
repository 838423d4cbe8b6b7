"""`local`: one process, no distribution, the reference the others are measured against."""

from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.strategies import base


class LocalAdapter(base.StrategyAdapter):
  """One process on its own."""
  name = "local"


def local_adapter():
  """The started adapter of one process on its own, whatever TF_CONFIG says."""
  return LocalAdapter(task=cluster_lib.LOCAL_TASK).start()
