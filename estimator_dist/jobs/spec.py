"""A job as a value: its strategy, its tasks and its program, checked once.

Every engine (the local launcher, SLURM, Kubernetes, Spark) takes a `JobSpec`; each
engine's own settings are a dataclass of that engine.
"""

import dataclasses
from typing import Optional, Tuple

from absl import flags

from estimator_dist import errors
from estimator_dist.strategies import traits as traits_lib


@dataclasses.dataclass(frozen=True)
class JobSpec:
  """What to run and as which tasks.

  strategy: a strategy name or alias; kept as the strategy's own name.
  num_workers: training tasks (horovod: ranks; mirrored: replicas of its one process).
  num_ps: parameter_server's ps tasks; None gives 1 for it and 0 for the others.
  evaluator: add an evaluator task (multi_worker, parameter_server).
  command: the program and its arguments; engines add --strategy (and --model_dir).
  """
  strategy: str
  num_workers: int = 2
  num_ps: Optional[int] = None
  evaluator: bool = False
  command: Tuple[str, ...] = ()

  def __post_init__(self):
    traits = traits_lib.of(self.strategy)
    set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
    set_("strategy", traits.name)
    set_("command", tuple(self.command))
    if self.num_ps is None:
      set_("num_ps", 1 if traits.needs_ps else 0)
    errors.check_positive("num_workers", self.num_workers)
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
  def num_tasks(self) -> int:
    """Processes the job starts (horovod: its ranks)."""
    if self.traits.one_process:
      return 1
    return self.num_workers + self.num_ps + int(self.evaluator)

  @property
  def program(self) -> Tuple[str, ...]:
    """The command every task runs: the user's, told the strategy."""
    return self.command + (f"--strategy={self.strategy}",)


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobFlags:
  """The flags that describe a job, as FlagHolders."""
  strategy: flags.FlagHolder
  num_workers: flags.FlagHolder
  num_ps: flags.FlagHolder
  evaluator: flags.FlagHolder

  def job(self, command) -> JobSpec:
    return JobSpec(strategy=self.strategy.value, num_workers=self.num_workers.value,
                   num_ps=self.num_ps.value, evaluator=self.evaluator.value,
                   command=tuple(command))


def define_flags(flag_values=flags.FLAGS, *,
                 num_workers_help="Training processes (mirrored: replicas).") -> JobFlags:
  """Defines the job flags that launch, k8s and slurm share on `flag_values`."""
  return JobFlags(
      strategy=flags.DEFINE_enum("strategy", "multi_worker", traits_lib.NAMES,
                                 "Distribution strategy; passed to the program as --strategy.",
                                 flag_values=flag_values),
      num_workers=flags.DEFINE_integer("num_workers", 2, num_workers_help, lower_bound=1,
                                       flag_values=flag_values),
      num_ps=flags.DEFINE_integer("num_ps", None, "parameter_server: ps tasks (default 1).",
                                  lower_bound=0, flag_values=flag_values),
      evaluator=flags.DEFINE_bool("evaluator", False,
                                  "multi_worker, parameter_server: add an evaluator.",
                                  flag_values=flag_values))
