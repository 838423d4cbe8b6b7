"""A sweep's Optuna study: its options, storage, sampler and pruner, created once.

Storage: a SQLite file in the sweep dir by default; any SQLAlchemy URL (postgresql://...)
for sweeps across machines; `journal:PATH` for Optuna's journal file on a shared file
system. The relational storages keep heartbeats: a trial whose runner died (kill -9, a lost
machine) goes stale and is queued again with its values, and its job resumes from its
checkpoints.
"""

import dataclasses
import os
import random
import warnings
from typing import Optional, Tuple

import optuna

from estimator_dist import errors
from estimator_dist.experiments import fixed_points
from estimator_dist.experiments import pbt_values
from estimator_dist.experiments import pruners
from estimator_dist.experiments import space as space_lib
from estimator_dist.experiments import storage as storage_lib
from estimator_dist.strategies import traits as traits_lib

SAMPLERS = ("tpe", "random", "grid")
PRUNERS = pruners.NAMES
DIRECTIONS = ("maximize", "minimize")
STUDY_NAME = "sweep"
# What a sweep run again must keep (the rest, such as --parallel, may change).
_KEPT = ("space", "workers_per_trial", "strategy", "sampler", "seed", "zip",
         "pruner", "prune_after_trials", "prune_after_steps", "min_resource_steps",
         "reduction_factor", "scheduler", "population", "pbt_interval_steps", "pbt_quantile",
         "pbt_keep", "metric", "direction")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepOptions:
  """What a sweep searches, how, and where it keeps its study.

  space: the search space's text (see `space`); each trial's values reach the program
    as flags.
  trials: trials to finish (complete or pruned); a grid runs at most its size.
  parallel: trials at once (on this machine, each on its own share of the CPUs; under
    SLURM, the array's tasks).
  workers_per_trial, strategy: every trial is a job of this strategy and size.
  sampler, seed: how values are picked (grid: the product of the choice lists).
  zip: the i-th trial takes the i-th value of every choice list.
  pruner, prune_after_trials, prune_after_steps: stopping unpromising trials early,
    from the evaluations they report (see `pruners`); min_resource_steps,
    reduction_factor: the rungs of asha and hyperband (None: Optuna's defaults).
  scheduler, population, pbt_interval_steps, pbt_quantile, pbt_keep: "pbt" trains
    `population` members in generations of `pbt_interval_steps` steps, the bottom quantile
    copying the top's checkpoints and values, perturbed but for those of `pbt_keep`
    (`pbt`); "none": trials are independent.
  metric, direction: the eval metric the sweep optimises.
  sweep_dir: trials' model_dirs, the study's SQLite file, the report.
  storage: None (SQLite in sweep_dir), an SQLAlchemy URL, or journal:PATH.
  retry_failed: a grid or --zip sweep run again queues each point whose trials failed
    once more; False leaves them failed (the sweep runs the rest, reports them and
    fails). It may differ from run to run.
  mlflow_tracking_uri: the MLflow server of the sweep's run and its trials' nested runs
    (`sweep_tracking`).
  progress_secs: a progress line this often (`sweep_progress`; 0: never).
  """
  space: str
  trials: int = 10
  parallel: int = 1
  workers_per_trial: int = 1
  strategy: str = "local"
  sampler: str = "tpe"
  seed: Optional[int] = None
  zip: bool = False
  pruner: str = "none"
  prune_after_trials: int = 2
  prune_after_steps: int = 1  # The initial checkpoint's evaluation says nothing yet.
  min_resource_steps: Optional[int] = None
  reduction_factor: Optional[int] = None
  scheduler: str = "none"
  population: Optional[int] = None
  pbt_interval_steps: Optional[int] = None
  pbt_quantile: float = 0.25
  pbt_keep: Tuple[str, ...] = ()
  metric: str = "accuracy"
  direction: str = "maximize"
  sweep_dir: str
  storage: Optional[str] = None
  retry_failed: bool = True
  mlflow_tracking_uri: Optional[str] = None
  progress_secs: float = 30.0

  def __post_init__(self):
    for name, choices in (("sampler", SAMPLERS), ("pruner", PRUNERS),
                          ("scheduler", pbt_values.SCHEDULERS),
                          ("direction", DIRECTIONS)):
      errors.check_choice(name, getattr(self, name), choices)
    object.__setattr__(self, "strategy", traits_lib.of(self.strategy).name)
    for name in ("trials", "parallel", "workers_per_trial"):
      errors.check_positive(name, getattr(self, name))
    errors.check_non_negative("prune_after_trials", self.prune_after_trials)
    errors.check_non_negative("prune_after_steps", self.prune_after_steps)
    pruners.check_rungs(self.pruner, min_resource_steps=self.min_resource_steps,
                        reduction_factor=self.reduction_factor)
    errors.check_non_negative_number("progress_secs", self.progress_secs)
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


def _sampler(options):
  if options.sampler in ("grid", "random"):  # A grid's points are queued (`points`).
    return optuna.samplers.RandomSampler(seed=options.seed)
  return optuna.samplers.TPESampler(seed=options.seed)


def open_study(options, *, create):
  """The sweep's study; `create` makes it (once, before any trial runner starts)."""
  store = storage_lib.open_storage(options.storage_url)
  kwargs = dict(study_name=STUDY_NAME, storage=store, sampler=_sampler(options),
                pruner=pruners.of(options))
  if not create:
    return optuna.load_study(**kwargs)
  study = optuna.create_study(direction=options.direction, load_if_exists=True, **kwargs)
  if study.direction.name.lower() != options.direction:
    raise errors.ConfigError(
        f"the study in {options.storage_url} {study.direction.name.lower()}s; "
        f"--direction={options.direction} does not match. Use another --sweep_dir or "
        f"--storage for a new sweep.")
  searched = {name: getattr(options, name) for name in _KEPT}
  stored = study.user_attrs.get("options")
  if stored is not None:  # A sweep of an earlier release kept fewer: theirs were defaults.
    stored = {**{n: getattr(SweepOptions, n, None) for n in _KEPT},
              **{n: tuple(v) if isinstance(v, list) else v for n, v in stored.items()}}
  if stored is None:
    study.set_user_attr("options", searched)
    with warnings.catch_warnings():  # The dashboard names the objective after the metric.
      warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
      study.set_metric_names([options.metric])
  elif stored != searched:
    changed = ", ".join(f"--{n}={stored[n]!r} (now {searched[n]!r})"
                        for n in _KEPT if stored[n] != searched[n])
    raise errors.ConfigError(
        f"the sweep in {options.storage_url} ran with {changed}; run it again with those "
        f"values to resume it, or give a new --sweep_dir (or --storage) for a new sweep.")
  if not study.trials:  # Queued once; a resumed sweep has them.
    for params in points(options):
      study.enqueue_trial(params)
  elif options.fixed_points:
    fixed_points.queue_again(study, options=options)
  return study


def points(options):
  """The values of every trial of a grid (a sample of it when --trials is fewer) or of
  --zip; none for a sampler that picks them."""
  if options.zip:
    return space_lib.zipped(options.search_space)[:options.trial_count]
  if options.sampler != "grid":
    return []
  grid = space_lib.product(options.search_space)
  if options.trial_count < len(grid):
    random.Random(options.seed).shuffle(grid)
  return grid[:options.trial_count]


def stored_options(sweep_dir, *, storage=None) -> SweepOptions:
  """The options a sweep was created with (for its report)."""
  url = storage or SweepOptions.default_storage(sweep_dir)
  if not storage and not os.path.exists(os.path.join(sweep_dir, "study.db")):
    raise errors.ConfigError(f"{sweep_dir} holds no sweep (no study.db); give the --sweep_dir "
                             f"of a sweep, and its --storage if it used one.")
  found = optuna.load_study(study_name=STUDY_NAME, storage=storage_lib.open_storage(url))
  if "options" not in found.user_attrs:
    raise errors.ConfigError(f"the study in {url} was not made by a sweep.")
  return SweepOptions(**found.user_attrs["options"], sweep_dir=sweep_dir, storage=storage)


def ask(study, options):
  """The next trial: a queued one first (a retry, a grid's point), else the sampler's."""
  with warnings.catch_warnings():  # We beat for the trial ourselves (TrialJob.beat).
    warnings.filterwarnings("ignore", "Heartbeat of storage is supposed to be used")
    return study.ask(fixed_distributions=options.search_space)


def surplus(study, trial, options):
  """Whether `trial` is one more than the sweep needs: runners sharing the study (SLURM
  array tasks) may ask at the same moment. Such a trial is failed at once."""
  if options.scheduler == "pbt":  # Only the segments one runner queued: not the sampler's.
    extra = pbt_values.MEMBER not in study._storage.get_trial(  # pylint: disable=protected-access
        trial._trial_id).user_attrs  # pylint: disable=protected-access
  elif options.fixed_points:
    extra = fixed_points.repeats_a_point(study, trial)
  else:
    counted = [t for t in finished(study) + active(study) if t.number < trial.number]
    extra = len(counted) >= options.trial_count
  if not extra:
    return False
  trial.set_user_attr("surplus", True)
  study.tell(trial, state=optuna.trial.TrialState.FAIL)
  return True


def over(study, options):
  """Whether the sweep has run what it runs: each point of a grid or --zip finished or
  failed (none runs or waits), or `trial_count` finished trials."""
  if options.queued_only:
    return not active(study)
  return len(finished(study)) >= options.trial_count


def wants_trial(study, options):
  """Whether a runner with a free slot takes a trial: a queued one (a grid's point, a
  retry), or, with a sampler, a new one while the finished and active are too few."""
  if waiting(study):
    return True
  return (not options.queued_only and
          len(finished(study)) + len(active(study)) < options.trial_count)


def finished(study):
  return [t for t in study.get_trials(deepcopy=False) if fixed_points.is_finished(t)]


def active(study):
  return [t for t in study.get_trials(deepcopy=False) if t.state in fixed_points.ACTIVE]


def waiting(study):
  return [t for t in study.get_trials(deepcopy=False)
          if t.state == optuna.trial.TrialState.WAITING]


def fail_stale(study):
  """Fails the trials whose runner stopped beating; they are queued again."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    optuna.storages.fail_stale_trials(study)  # Nothing to do without heartbeats (journal).
