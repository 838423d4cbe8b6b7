"""Who this process is in the cluster: `TaskInfo`, one immutable view of every source.

This module reads TF_CONFIG (as the launcher, a user or the Kubeflow TFJob operator
writes it: `"environment": "cloud"`, service host names, `master` for the chief, an
evaluator left out of the cluster) and a Horovod or MPI launcher's variables;
`slurm_env` reads a SLURM step, and `environment` picks the source.
"""

import dataclasses
import difflib
import json
import types
from typing import Mapping, Optional, Tuple

from estimator_dist import errors

ROLES = ("chief", "worker", "ps", "evaluator")
# What TensorFlow reads from TF_CONFIG (RunConfig, the cluster resolvers).
TF_CONFIG_KEYS = ("cluster", "task", "environment", "rpc_layer", "session_master",
                  "eval_session_master")
TASK_KEYS = ("type", "index", "trial")
TRAINING_ROLES = ("chief", "worker")
TF_CONFIG_EXAMPLE = ('{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"]}, '
                     '"task": {"type": "worker", "index": 0}}')
# (rank, size, local rank, local size) as each launcher of Horovod ranks names them.
HOROVOD_VARIABLES = (
    ("HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"),
)


class ClusterConfigError(errors.ConfigError):
  """A cluster description that cannot work; the message names the fix."""


@dataclasses.dataclass(frozen=True)
class TaskInfo:
  """This process's place in the cluster.

  `rank` and `size` count training tasks only (chief first, then workers);
  ps and evaluator tasks have rank -1. `cluster` maps each role to its addresses
  and cannot be changed.
  """
  role: str
  index: int
  rank: int
  size: int
  cluster: Mapping[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict)
  local_rank: int = 0
  local_size: int = 1
  source: str = "local"

  def __post_init__(self):
    frozen = types.MappingProxyType({r: tuple(a) for r, a in dict(self.cluster).items()})
    object.__setattr__(self, "cluster", frozen)

  @property
  def name(self) -> str:
    """role:index, as the launcher, the mailbox and the lines of a job name the task."""
    return f"{self.role}:{self.index}"

  @property
  def is_chief(self) -> bool:
    return self.rank == 0

  @property
  def is_training(self) -> bool:
    return self.role in TRAINING_ROLES

  def num_tasks(self, role: str) -> int:
    return len(self.cluster.get(role, ()))

  def describe(self) -> str:
    return f"{self.name} (rank {self.rank} of {self.size}, from {self.source})"

  def tf_config(self) -> str:
    """This task as TensorFlow reads it: TF_CONFIG with 'chief' for a legacy 'master'."""
    return tf_config(self.cluster, self.role, self.index)


LOCAL_TASK = TaskInfo(role="chief", index=0, rank=0, size=1)


def _fail(field: str, value, fix: str):
  raise ClusterConfigError(f"{field} is {value!r}: {fix}")


def _check_address(field: str, address):
  host, sep, port = str(address).rpartition(":")
  if not isinstance(address, str) or not sep or not host or not port.isdigit():
    _fail(field, address,
          'each address must be a "host:port" string, for example "10.0.0.5:2222".')
  if not 1 <= int(port) <= 65535:
    _fail(field, address, f"port {int(port)} is not a port: use one from 1 to 65535.")


def _check_keys(field: str, given, known):
  """Refuses a key TensorFlow would ignore (a typo would train alone, and silently)."""
  for key in given:
    if key not in known:
      close = difflib.get_close_matches(str(key), known, n=1)
      hint = f"did you mean {close[0]!r}? " if close else ""
      _fail(f"{field} key", key, f"{hint}The keys are {', '.join(known)}.")


def _parse_cluster(cluster, name='TF_CONFIG "cluster"') -> dict:
  """The checked cluster, 'master' named 'chief'; `name` is where it came from."""
  if not isinstance(cluster, dict):
    _fail(name, cluster, 'it must map a task type to a list of "host:port" addresses.')
  parsed, seen = {}, {}
  for role, addresses in cluster.items():
    role_name = "chief" if role == "master" else role
    if role_name not in ROLES:
      _fail(f"{name} task type", role,
            f"use only {', '.join(ROLES)} (and the legacy 'master' for chief).")
    if role_name in parsed:
      _fail(name, sorted(cluster), "give either 'chief' or 'master', not both.")
    if not isinstance(addresses, (list, tuple)) or not addresses:
      _fail(f'{name}."{role}"', addresses,
            'it must be a non-empty list of "host:port" addresses.')
    for i, address in enumerate(addresses):
      _check_address(f'{name}."{role}"[{i}]', address)
      if address in seen:
        _fail(f'{name}."{role}"[{i}]', address, f"the same address is already "
              f"{seen[address]}; every task needs its own host:port.")
      seen[address] = f"{role}[{i}]"
    parsed[role_name] = tuple(addresses)
  for single in ("chief", "evaluator"):
    if len(parsed.get(single, ())) > 1:
      _fail(f'{name}."{single}"', list(parsed[single]),
            f"a cluster has at most one {single}; list the others under 'worker'.")
  if not parsed.get("chief") and not parsed.get("worker"):
    _fail(name, cluster, "it needs a 'chief' or at least one 'worker' task to train.")
  return parsed


def _parse_task(task, cluster):
  if not isinstance(task, dict) or "type" not in task:
    _fail('TF_CONFIG "task"', task,
          'it must name this process, e.g. {"type": "worker", "index": 0}.')
  role = "chief" if task["type"] == "master" else task["type"]
  index = task.get("index", 0)
  if not isinstance(index, int) or isinstance(index, bool):
    _fail('TF_CONFIG "task"."index"', index,
          "it must be an integer, the task's position in its list.")
  if role == "evaluator" and index != 0:
    _fail('TF_CONFIG "task"."index"', index, "a job has one evaluator and its index is 0.")
  # The Kubeflow TFJob operator leaves the evaluator out of the cluster, as TensorFlow
  # allows: it does not train.
  if role == "evaluator" and role not in cluster:
    return role, index
  if role not in cluster:
    _fail('TF_CONFIG "task"."type"', task["type"],
          f"it must be one of the cluster's task types {sorted(cluster)}.")
  count = len(cluster[role])
  if not 0 <= index < count:
    _fail('TF_CONFIG "task"."index"', index,
          f"the cluster has {count} '{role}' task(s), so use 0..{count - 1}.")
  return role, index


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
    _fail("TF_CONFIG", config, f"it must be a JSON object such as {TF_CONFIG_EXAMPLE}")
  _check_keys("TF_CONFIG", config, TF_CONFIG_KEYS)
  if isinstance(config.get("task"), dict):
    _check_keys('TF_CONFIG "task"', config["task"], TASK_KEYS)
  if not config.get("cluster"):
    return LOCAL_TASK
  cluster = _parse_cluster(config["cluster"])
  role, index = _parse_task(config.get("task"), cluster)
  return task_in(cluster, role, index, source="TF_CONFIG")


def task_in(cluster, role, index, source) -> TaskInfo:
  """The TaskInfo of task `index` of `role` in a checked `cluster`."""
  chiefs = len(cluster.get("chief", ()))
  rank = {"chief": 0, "worker": chiefs + index}.get(role, -1)
  local_rank, local_size = -1, 1
  if role in cluster:
    local_rank, local_size = _local_place(cluster, cluster[role][index], rank)
  return TaskInfo(role=role, index=index, rank=rank,
                  size=chiefs + len(cluster.get("worker", ())), cluster=cluster,
                  local_rank=local_rank, local_size=local_size, source=source)


def _local_place(cluster, address, rank):
  """(this task's index among the training tasks on its host, how many there are).

  The index is -1 for a task that does not train.
  """
  host = address.rpartition(":")[0]
  training = [a for role in TRAINING_ROLES for a in cluster.get(role, ())]
  local = [a for a in training if a.rpartition(":")[0] == host]
  return (local.index(address) if rank >= 0 else -1), max(len(local), 1)


def client_task(remote_cluster) -> TaskInfo:
  """The standalone client that drives `remote_cluster`, a cluster of standard servers.

  `remote_cluster` maps roles to addresses, as a dict or its JSON. The client is the
  chief of the job: it writes the checkpoints and evaluates the end.
  """
  if isinstance(remote_cluster, str):
    try:
      remote_cluster = json.loads(remote_cluster)
    except json.JSONDecodeError as e:
      raise ClusterConfigError(
          f"remote_cluster is not valid JSON ({e.msg} at character {e.pos}): "
          f"{remote_cluster[:200]!r}. Give it as '{{\"worker\": [\"host1:2222\"], "
          f"\"ps\": [\"host2:2222\"]}}'.") from None
  cluster = _parse_cluster(remote_cluster, name="remote_cluster")
  size = len(cluster.get("chief", ())) + len(cluster.get("worker", ()))
  return TaskInfo(role="chief", index=0, rank=0, size=size, cluster=cluster,
                  source="remote_cluster")


def from_horovod_environment(env: Mapping[str, str]) -> Optional[TaskInfo]:
  """The rank a Horovod or MPI launcher gave this process (None if none did)."""
  for names in HOROVOD_VARIABLES:
    if names[0] in env and names[1] in env:
      try:
        rank, size, local_rank, local_size = (int(env.get(n, d)) for n, d in
                                              zip(names, ("", "", "0", "1")))
      except ValueError:
        raise ClusterConfigError(
            f"{'/'.join(names)} are {[env.get(n) for n in names]}: they must be integers, "
            f"as horovodrun and mpirun set them.") from None
      return horovod_task(rank, size, local_rank, local_size)
  return None


def horovod_task(rank, size, local_rank, local_size) -> TaskInfo:
  """Horovod rank `rank` of `size`: rank 0 is the chief."""
  return TaskInfo(role="chief" if rank == 0 else "worker", index=rank, rank=rank, size=size,
                  local_rank=local_rank, local_size=local_size, source="horovod")


def assign_roles(addresses, num_ps=0, evaluator=False, source="local"):
  """The cluster of one task per address, in the order TensorFlow's SlurmClusterResolver
  gives them: chief, evaluator, ps, then workers (its roles sorted by name).

  Returns (cluster, roles), roles[i] being (role, index) of addresses[i].
  """
  counts = {"chief": 1, "evaluator": int(bool(evaluator)), "ps": num_ps}
  counts["worker"] = len(addresses) - sum(counts.values())
  if counts["worker"] < 0:
    need = len(addresses) - counts["worker"]
    roles = ["the chief", *([f"{num_ps} ps"] if num_ps else []),
             *(["the evaluator"] if evaluator else [])]
    raise ClusterConfigError(
        f"{source} started {len(addresses)} task(s), fewer than the {need} that "
        f"{', '.join(roles[:-1])} and {roles[-1]} need. Start at least {need}.")
  cluster, roles, position = {}, [], 0
  for role in sorted(counts):
    if counts[role]:
      cluster[role] = tuple(addresses[position:position + counts[role]])
      roles += [(role, i) for i in range(counts[role])]
      position += counts[role]
  return cluster, roles


def tf_config(cluster: Mapping[str, Tuple[str, ...]], role: str, index: int) -> str:
  """The TF_CONFIG string for one task of `cluster`."""
  return json.dumps({"cluster": {r: list(a) for r, a in cluster.items()},
                     "task": {"type": role, "index": index}})
