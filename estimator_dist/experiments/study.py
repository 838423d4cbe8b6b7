"""A sweep's Optuna study: its storage, sampler and pruner, created once from its options
(sweep_options.SweepOptions).

Storage: a SQLite file in the sweep dir by default; any SQLAlchemy URL (postgresql://...)
for sweeps across machines; `journal:PATH` for Optuna's journal file on a shared file
system. The relational storages keep heartbeats: a trial whose runner died (kill -9, a lost
machine) goes stale and is queued again with its values, and its job resumes from its
checkpoints.
"""

import datetime
import os
import random
import warnings

import optuna

from estimator_dist import errors
from estimator_dist.experiments import fixed_points
from estimator_dist.experiments import pbt_values
from estimator_dist.experiments import pruners
from estimator_dist.experiments import space as space_lib
from estimator_dist.experiments import storage as storage_lib
from estimator_dist.experiments import sweep_options

SAMPLERS = sweep_options.SAMPLERS
PRUNERS = sweep_options.PRUNERS
DIRECTIONS = sweep_options.DIRECTIONS
STUDY_NAME = "sweep"
# What a sweep run again must keep (the rest, such as --parallel, may change).
_KEPT = ("space", "workers_per_trial", "strategy", "sampler", "seed", "zip",
         "pruner", "prune_after_trials", "prune_after_steps", "min_resource_steps",
         "reduction_factor", "scheduler", "population", "pbt_interval_steps", "pbt_quantile",
         "pbt_keep", "metric", "direction")


SweepOptions = sweep_options.SweepOptions  # Where the runners find it.


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
    extra = pbt_values.MEMBER not in storage_lib.stored(study, trial).user_attrs
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


_CLOCKS_STARTED = set()  # Trial ids `fail_stale` recorded a heartbeat of, once.


def fail_stale(study):
  """Fails the trials whose runner stopped beating; they are queued again. A running trial
  that never beat (its runner was killed between asking for it and its first heartbeat)
  gets one heartbeat here once it is GRACE_SECS old, so that it goes stale too."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    optuna.storages.fail_stale_trials(study)  # Nothing to do without heartbeats (journal).
  storage = study._storage  # pylint: disable=protected-access
  if getattr(storage, "get_heartbeat_interval", lambda: None)() is None:  # A journal.
    return
  old = datetime.datetime.now() - datetime.timedelta(seconds=storage_lib.GRACE_SECS)
  for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
    trial_id = t._trial_id  # pylint: disable=protected-access
    if trial_id not in _CLOCKS_STARTED and t.datetime_start < old:
      _CLOCKS_STARTED.add(trial_id)
      storage.record_heartbeat(trial_id)
