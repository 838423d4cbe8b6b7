"""What each strategy is, in one table: the factory, the adapters, the job checks and
every engine (launcher, SLURM, Kubernetes, Spark) read it instead of comparing names.

No TensorFlow here: the launcher and the engines check a job without starting TF.
"""

import dataclasses
from typing import Tuple

from estimator_dist import errors


@dataclasses.dataclass(frozen=True, kw_only=True)
class Traits:
  """Facts about one strategy, the ones both the adapters and the engines branch on.

  adapter: (module, class) of its adapter; the factory imports the module only when the
    strategy is used, so Horovod is imported only for horovod.
  options: (module, class) of its options dataclass (its adapter's `Options`), whose module
    imports no TensorFlow: the training flags are made from it.
  roles: the task types its cluster may have; () for a strategy whose tasks do not come
    from TF_CONFIG (one process, or ranks started by horovodrun).
  needs_ps: it needs at least one ps task.
  one_process: the whole job is one process.
  replicas_are_devices: its replicas are devices of its one process, so an engine passes
    the job's replica count to that process (env_vars.NUM_DEVICES).
  ranks_from_horovodrun: its processes are ranks that horovodrun or mpirun (srun's MPI,
    an MPIJob, horovod.spark) starts and numbers, not tasks of a TF_CONFIG cluster.
  synchronous: replicas' gradients make one update (so the learning rate is scaled).
  """
  name: str
  adapter: Tuple[str, str]
  options: Tuple[str, str]
  roles: Tuple[str, ...] = ()
  needs_ps: bool = False
  one_process: bool = False
  replicas_are_devices: bool = False
  ranks_from_horovodrun: bool = False
  synchronous: bool = True

  @property
  def uses_tf_config(self) -> bool:
    return bool(self.roles)

  @property
  def takes_evaluator(self) -> bool:
    return "evaluator" in self.roles


_MODULE = "estimator_dist.strategies."
_OPTIONS = _MODULE + "options"
TABLE = {t.name: t for t in (
    Traits(name="local", adapter=(_MODULE + "local", "LocalAdapter"),
           options=(_OPTIONS, "Options"), one_process=True),
    Traits(name="mirrored", adapter=(_MODULE + "mirrored", "MirroredAdapter"),
           options=(_OPTIONS, "MirroredOptions"), one_process=True,
           replicas_are_devices=True),
    Traits(name="multi_worker", adapter=(_MODULE + "multi_worker", "MultiWorkerAdapter"),
           options=(_OPTIONS, "MultiWorkerOptions"), roles=("chief", "worker", "evaluator")),
    Traits(name="parameter_server",
           adapter=(_MODULE + "parameter_server", "ParameterServerAdapter"),
           options=(_OPTIONS, "ParameterServerOptions"),
           roles=("chief", "worker", "ps", "evaluator"), needs_ps=True, synchronous=False),
    Traits(name="horovod", adapter=(_MODULE + "horovod", "HorovodAdapter"),
           options=(_MODULE + "horovod_options", "HorovodOptions"),
           ranks_from_horovodrun=True),
)}
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
