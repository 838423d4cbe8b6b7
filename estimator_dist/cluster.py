"""Who this process is in the cluster: one immutable view of TF_CONFIG or Horovod."""

import dataclasses
import json
import os
from typing import Mapping, Optional, Tuple

from estimator_dist import errors

ROLES = ("chief", "worker", "ps", "evaluator")
TRAINING_ROLES = ("chief", "worker")
# Set by the launcher for `mirrored`: how many replicas a CPU-only machine splits into.
NUM_DEVICES_ENV = "ESTIMATOR_DIST_NUM_DEVICES"
TF_CONFIG_EXAMPLE = ('{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"]}, '
                     '"task": {"type": "worker", "index": 0}}')


class ClusterConfigError(errors.ConfigError):
  """A cluster description that cannot work; the message names the fix."""


@dataclasses.dataclass(frozen=True)
class TaskInfo:
  """This process's place in the cluster.

  `rank` and `size` count training tasks only (chief first, then workers);
  ps and evaluator tasks have rank -1.
  """
  role: str
  index: int
  rank: int
  size: int
  cluster: Mapping[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict)
  local_rank: int = 0
  local_size: int = 1
  source: str = "local"

  @property
  def is_chief(self) -> bool:
    return self.rank == 0

  @property
  def is_training(self) -> bool:
    return self.role in TRAINING_ROLES

  def num_tasks(self, role: str) -> int:
    return len(self.cluster.get(role, ()))

  def describe(self) -> str:
    return f"{self.role}:{self.index} (rank {self.rank} of {self.size}, from {self.source})"


LOCAL_TASK = TaskInfo(role="chief", index=0, rank=0, size=1)


def _fail(field: str, value, fix: str):
  raise ClusterConfigError(f"TF_CONFIG {field} is {value!r}: {fix}")


def _parse_address(role: str, index: int, address) -> str:
  host, sep, port = str(address).rpartition(":")
  if not isinstance(address, str) or not sep or not host or not port.isdigit():
    _fail(f'"cluster"."{role}"[{index}]', address,
          'each address must be a "host:port" string, for example "10.0.0.5:2222".')
  return address


def _parse_cluster(cluster) -> dict:
  if not isinstance(cluster, dict):
    _fail('"cluster"', cluster, 'it must map a task type to a list of "host:port" addresses.')
  parsed, seen = {}, {}
  for role, addresses in cluster.items():
    name = "chief" if role == "master" else role
    if name not in ROLES:
      _fail('"cluster" task type', role,
            f"use only {', '.join(ROLES)} (and the legacy 'master' for chief).")
    if name in parsed:
      _fail('"cluster"', sorted(cluster), "give either 'chief' or 'master', not both.")
    if not isinstance(addresses, (list, tuple)) or not addresses:
      _fail(f'"cluster"."{role}"', addresses,
            'it must be a non-empty list of "host:port" addresses.')
    for i, address in enumerate(addresses):
      _parse_address(role, i, address)
      if address in seen:
        _fail(f'"cluster"."{role}"[{i}]', address,
              f"the same address is already {seen[address]}; every task needs its own host:port.")
      seen[address] = f"{role}[{i}]"
    parsed[name] = tuple(addresses)
  for single in ("chief", "evaluator"):
    if len(parsed.get(single, ())) > 1:
      _fail(f'"cluster"."{single}"', list(parsed[single]),
            f"a cluster has at most one {single}; list the others under 'worker'.")
  if not parsed.get("chief") and not parsed.get("worker"):
    _fail('"cluster"', cluster, "it needs a 'chief' or at least one 'worker' task to train.")
  return parsed


def parse_tf_config(text: Optional[str]) -> TaskInfo:
  """Parses a TF_CONFIG string into a TaskInfo; raises ClusterConfigError."""
  if not text or not text.strip():
    return LOCAL_TASK
  try:
    config = json.loads(text)
  except json.JSONDecodeError as e:
    raise ClusterConfigError(
        f"TF_CONFIG is not valid JSON ({e.msg} at character {e.pos}): {text[:200]!r}. "
        f"Set it to a JSON object such as {TF_CONFIG_EXAMPLE}") from None
  if not isinstance(config, dict):
    _fail("", config, f"it must be a JSON object such as {TF_CONFIG_EXAMPLE}")
  if not config.get("cluster"):
    return LOCAL_TASK
  cluster = _parse_cluster(config["cluster"])
  task = config.get("task")
  if not isinstance(task, dict) or "type" not in task:
    _fail('"task"', task, 'it must name this process, e.g. {"type": "worker", "index": 0}.')
  role = "chief" if task["type"] == "master" else task["type"]
  if role not in cluster:
    _fail('"task"."type"', task["type"],
          f"it must be one of the cluster's task types {sorted(cluster)}.")
  index = task.get("index", 0)
  if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(cluster[role]):
    count = len(cluster[role])
    _fail('"task"."index"', index,
          f"the cluster has {count} '{role}' task(s), so use 0..{count - 1}.")
  chiefs = len(cluster.get("chief", ()))
  size = chiefs + len(cluster.get("worker", ()))
  if role == "chief":
    rank = 0
  elif role == "worker":
    rank = chiefs + index
  else:
    rank = -1
  local_rank, local_size = _local_place(cluster, cluster[role][index], rank)
  return TaskInfo(role=role, index=index, rank=rank, size=size, cluster=cluster,
                  local_rank=local_rank, local_size=local_size, source="TF_CONFIG")


def _local_place(cluster, address, rank):
  """(this task's index among the training tasks on its host, how many there are).

  The index is -1 for a task that does not train.
  """
  host = address.rpartition(":")[0]
  training = [a for role in TRAINING_ROLES for a in cluster.get(role, ())]
  local = [a for a in training if a.rpartition(":")[0] == host]
  return (local.index(address) if rank >= 0 else -1), max(len(local), 1)


def from_environment() -> TaskInfo:
  """The task as TF_CONFIG describes it (a single local process without it)."""
  return parse_tf_config(os.environ.get("TF_CONFIG"))


def tf_config(cluster: Mapping[str, Tuple[str, ...]], role: str, index: int) -> str:
  """The TF_CONFIG string for one task of `cluster`."""
  return json.dumps({"cluster": {r: list(a) for r, a in cluster.items()},
                     "task": {"type": role, "index": index}})
