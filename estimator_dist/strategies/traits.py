"""What each strategy is, in one table: the adapters and the job checks both read it.

No TensorFlow here: the launcher and the engines check a job without starting TF.
"""

import dataclasses
from typing import Tuple

from estimator_dist import errors


@dataclasses.dataclass(frozen=True)
class Traits:
  """Facts about one strategy.

  roles: the task types its cluster may have; () for a strategy that runs in one
    process (or, for horovod, takes its ranks from horovodrun, not from TF_CONFIG).
  needs_ps: it needs at least one ps task.
  one_process: the whole job is one process (replicas are devices of it).
  synchronous: replicas' gradients make one update (so the learning rate is scaled).
  """
  name: str
  roles: Tuple[str, ...] = ()
  needs_ps: bool = False
  one_process: bool = False
  synchronous: bool = True

  @property
  def uses_tf_config(self) -> bool:
    return bool(self.roles)

  @property
  def takes_evaluator(self) -> bool:
    return "evaluator" in self.roles


TABLE = {
    "local": Traits("local", one_process=True),
    "mirrored": Traits("mirrored", one_process=True),
    "multi_worker": Traits("multi_worker", roles=("chief", "worker", "evaluator")),
    "parameter_server": Traits("parameter_server", roles=("chief", "worker", "ps", "evaluator"),
                               needs_ps=True, synchronous=False),
    "horovod": Traits("horovod"),
}
ALIASES = {"collective_all_reduce": "multi_worker"}
STRATEGIES = tuple(TABLE)
NAMES = STRATEGIES + tuple(ALIASES)


def of(name: str) -> Traits:
  """The traits of strategy `name` (an alias gives the strategy's own)."""
  key = ALIASES.get(name, name)
  if key not in TABLE:
    raise errors.ConfigError(
        f"strategy ({name!r}) is not one of {', '.join(NAMES)}. "
        f"Pick one, for example --strategy=multi_worker.")
  return TABLE[key]
