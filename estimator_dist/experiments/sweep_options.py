"""What a sweep searches, how, and where it keeps its study: SweepOptions, each option
with its flag.

`estimator-dist sweep` defines its flags from these fields (option_flags); the runners,
the SLURM array and the Spark engine take the options, which `__post_init__` checks.
"""

import dataclasses
import os
from typing import Optional, Tuple

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.experiments import pbt_values
from estimator_dist.experiments import pruners
from estimator_dist.experiments import space as space_lib
from estimator_dist.option_flags import option
from estimator_dist.strategies import traits as traits_lib

SAMPLERS = ("tpe", "random", "grid")
PRUNERS = pruners.NAMES
DIRECTIONS = ("maximize", "minimize")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepOptions:
  """What a sweep searches, how, and where it keeps its study; each field's flag says
  what it does. Each trial's values reach the program as flags; a grid runs at most its
  size; under SLURM, --parallel is the array's tasks. --retry_failed may differ from run to
  run; the options a sweep run again must keep are study._KEPT.
  """
  space: str = option(
      kind="string", flag_default=None, help="What to search: NAME=KIND(ARGS) entries "
      "separated by spaces, each NAME a flag of the program; KIND uniform, loguniform, int, "
      "logint (low,high) or choice(a,b,...).")
  trials: int = option(10, kind="integer", lower_bound=1,
                       help="Trials to finish (complete, pruned or diverged).")
  parallel: int = option(1, kind="integer", lower_bound=1,
                         help="Trials at once, each on its own CPUs.")
  workers_per_trial: int = option(1, kind="integer", lower_bound=1,
                                  help="Training processes of each trial.")
  strategy: str = option("local", kind="enum", values=traits_lib.NAMES,
                         help="The strategy every trial's job trains with.")
  sampler: str = option("tpe", kind="enum", values=SAMPLERS,
                        help="tpe and random: Optuna's; grid: every choice combination.")
  seed: Optional[int] = option(None, kind="integer", help="The sampler's seed.")
  zip: bool = option(False, kind="bool",
                     help="The i-th trial takes the i-th value of every choice list.")
  pruner: str = option("none", kind="enum", values=PRUNERS,
                       help="Stops unpromising trials from their evaluations.")
  prune_after_trials: int = option(
      2, kind="integer", lower_bound=0,
      help="median: trials that finish before any is pruned.")
  prune_after_steps: int = option(  # The initial checkpoint's evaluation says nothing yet.
      1, kind="integer", lower_bound=0, help="median: steps a trial trains before it can "
      "be pruned (1: not at the evaluation of its initial values).")
  min_resource_steps: Optional[int] = option(
      None, kind="integer", help="asha, hyperband: the steps of the first rung (default: "
      "Optuna's, from the first finished trial's evaluations).")
  reduction_factor: Optional[int] = option(
      None, kind="integer", help="asha, hyperband: each rung is this many times the last, "
      "and keeps 1/this of the trials (default 4 for asha, 3 for hyperband).")
  scheduler: str = option(
      "none", kind="enum", values=pbt_values.SCHEDULERS, help="pbt: population-based "
      "training of --population members, the bottom --pbt_quantile taking the top's "
      "checkpoints and perturbed values every --pbt_interval_steps.")
  population: Optional[int] = option(None, kind="integer",
                                     help="pbt: members training side by side.")
  pbt_interval_steps: Optional[int] = option(
      None, kind="integer", help="pbt: global steps between two exploits.")
  pbt_quantile: float = option(
      0.25, kind="float", help="pbt: the share of members at the bottom that copies the top.")
  pbt_keep: Tuple[str, ...] = option(
      (), kind="list", flag_default=[], help="pbt: values an exploiting member takes "
      "unperturbed (those that shape the model's variables).")
  metric: str = option("accuracy", kind="string",
                       help="The eval metric the sweep optimises.")
  direction: str = option("maximize", kind="enum", values=DIRECTIONS,
                          help="Whether a larger or a smaller metric is better.")
  sweep_dir: str = option(kind="string", flag_default=None,
                          help="Trials' model_dirs, the study, the report.")
  storage: Optional[str] = option(
      None, kind="string", help="The study's storage: an SQLAlchemy URL (postgresql://...) "
      "or journal:PATH for sweeps across machines (default: SQLite in --sweep_dir).")
  retry_failed: bool = option(
      True, kind="bool", help="A grid or --zip sweep run again runs each point whose trial "
      "failed once more; --noretry_failed leaves them failed: the sweep runs the rest, "
      "reports them and exits 1 naming them.")
  mlflow_tracking_uri: Optional[str] = option(
      None, kind="string", help="Record the sweep as a run of this MLflow tracking server, "
      "each trial's job a run nested in it (pip install 'estimator_dist[tracking]').")
  progress_secs: float = option(
      30.0, kind="float", lower_bound=0.0, help="Every this many seconds, say how many "
      "trials finished, run and failed, the best so far and the ETA; 0 never does.")

  def __post_init__(self):
    object.__setattr__(self, "strategy", traits_lib.of(self.strategy).name)
    option_flags.check_declared(self)
    pruners.check_rungs(self.pruner, min_resource_steps=self.min_resource_steps,
                        reduction_factor=self.reduction_factor)
    if self.mlflow_tracking_uri:
      errors.check_installed("mlflow", "--mlflow_tracking_uri")
    if not self.sweep_dir:
      raise errors.ConfigError("give the sweep a --sweep_dir: its trials' model_dirs, its "
                               "study and its report go there.")
    parsed = self.search_space  # Checks the space.
    if self.sampler == "grid":
      space_lib.grid(parsed)
    if self.zip:
      space_lib.zipped(parsed)
    object.__setattr__(self, "pbt_keep", tuple(self.pbt_keep or ()))
    pbt_values.check(self)

  @property
  def search_space(self):
    return space_lib.parse(self.space)

  @property
  def fixed_points(self) -> bool:
    """Whether the sweep's values are points queued when it is created (a grid, --zip):
    its runners run those and never ask the sampler for values."""
    return self.zip or self.sampler == "grid"

  @property
  def queued_only(self) -> bool:
    """Whether the runners run only queued trials: a grid's or --zip's points, or the
    generations PBT queues."""
    return self.fixed_points or self.scheduler == "pbt"

  @property
  def trial_count(self) -> int:
    """The trials the sweep finishes: a grid or a zip runs each of its points once (a
    point whose trials failed, left failed by --noretry_failed, is not finished)."""
    if self.zip:
      return min(self.trials, len(space_lib.zipped(self.search_space)))
    if self.sampler == "grid":
      return min(self.trials, len(space_lib.product(self.search_space)))
    return self.trials

  @property
  def storage_url(self) -> str:
    return self.storage or self.default_storage(self.sweep_dir)

  @staticmethod
  def default_storage(sweep_dir):
    return f"sqlite:///{os.path.abspath(sweep_dir)}/study.db"
