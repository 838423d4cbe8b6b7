"""A job as a value: its strategy, its tasks and its program, checked once.

Every engine (the local launcher, SLURM, Kubernetes, Spark) takes a `JobSpec`; each
engine's own settings are a dataclass of that engine.
"""

import dataclasses
from typing import Dict, Optional, Tuple

from absl import flags

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.option_flags import option
from estimator_dist.strategies import traits as traits_lib


@dataclasses.dataclass(frozen=True)
class JobSpec:
  """What to run and as which tasks.

  strategy: a strategy name or alias; kept as the strategy's own name.
  num_workers: training tasks (horovod: ranks; mirrored: replicas of its one process).
  num_ps: parameter_server's ps tasks; None gives 1 for it and 0 for the others.
  evaluator: add an evaluator task (multi_worker, parameter_server).
  command: the program and its arguments, which every task runs as given: the engines
    tell a task the job's strategy (and the launcher its model_dir) in its environment
    (`contract.task_env`), never on its command line.
  """
  strategy: str = option(kind="enum", values=traits_lib.NAMES, flag_default="multi_worker",
                         help="Distribution strategy; the program's tasks find it in their "
                         "environment (ESTIMATOR_DIST_STRATEGY).")
  num_workers: int = option(2, kind="integer", lower_bound=1,
                            help="Training processes (mirrored: replicas).")
  num_ps: Optional[int] = option(None, kind="integer", lower_bound=0,
                                 help="parameter_server: ps tasks (default 1).")
  evaluator: bool = option(False, kind="bool",
                           help="multi_worker, parameter_server: add an evaluator.")
  command: Tuple[str, ...] = ()

  def __post_init__(self):
    traits = traits_lib.of(self.strategy)
    set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
    set_("strategy", traits.name)
    set_("command", tuple(self.command))
    if self.num_ps is None:
      set_("num_ps", 1 if traits.needs_ps else 0)
    option_flags.check_declared(self)
    if traits.needs_ps and self.num_ps < 1:
      raise errors.ConfigError(f"--strategy={self.strategy} needs --num_ps of at least 1.")
    if self.num_ps and "ps" not in traits.roles:
      raise errors.ConfigError(
          f"--num_ps={self.num_ps} applies only to --strategy=parameter_server.")
    if self.evaluator and not traits.takes_evaluator:
      evaluated = [t.name for t in traits_lib.TABLE.values() if t.takes_evaluator]
      raise errors.ConfigError(
          f"--evaluator applies to {' and '.join(evaluated)}, not {self.strategy}.")
    if traits.one_process and not traits.replicas_are_devices and self.num_workers != 1:
      # One process with one replica: there is nothing for more workers to be.
      raise errors.ConfigError(
          f"--strategy={self.strategy} trains in one process; use --num_workers=1.")
    if not self.command:
      raise errors.ConfigError(
          "give the program to run after --, e.g. -- python -m model_zoo.mnist_cnn")

  @property
  def traits(self) -> traits_lib.Traits:
    return traits_lib.of(self.strategy)

  @property
  def task_names(self) -> frozenset:
    """The names (role:index) its tasks give themselves: a one-process job's chief:0,
    Horovod's ranks (chief:0, worker:1, ...), else its cluster's chief, workers, ps and
    evaluator."""
    if self.traits.one_process:
      return frozenset({"chief:0"})
    if self.traits.ranks_from_horovodrun:
      return frozenset({"chief:0", *(f"worker:{rank}" for rank in range(1, self.num_workers))})
    return frozenset(f"{role}:{index}" for role, count in self.cluster_roles
                     for index in range(count))

  @property
  def cluster_roles(self) -> tuple:
    """((role, count), ...) of its tf.distribute cluster: chief, workers, ps, evaluator."""
    return (("chief", 1), ("worker", self.num_workers - 1), ("ps", self.num_ps),
            ("evaluator", int(self.evaluator)))

  @property
  def num_tasks(self) -> int:
    """Processes the job starts (horovod: its ranks)."""
    if self.traits.one_process:
      return 1
    return self.num_workers + self.num_ps + int(self.evaluator)


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobFlags:
  """The flags that describe a job, as FlagHolders: {field: holder} of JobSpec's."""
  settings: Dict[str, flags.FlagHolder]

  def value(self, field):
    """The parsed value of the flag of JobSpec's `field`."""
    return self.settings[field].value

  def job(self, command) -> JobSpec:
    return option_flags.options_from_flags(JobSpec, self.settings, command=tuple(command))


def define_flags(flag_values=flags.FLAGS, *, num_workers_help=None) -> JobFlags:
  """Defines the job flags that launch, k8s and slurm share on `flag_values`; each
  engine words --num_workers its own way."""
  helps = {"num_workers": num_workers_help} if num_workers_help else {}
  return JobFlags(settings=option_flags.define_flags(JobSpec, flag_values=flag_values,
                                                     helps=helps))
