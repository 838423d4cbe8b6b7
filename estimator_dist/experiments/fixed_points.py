"""The points of a grid or --zip sweep, and the trials that ran them.

Such a sweep queues its points when it is created and its runners run only queued trials,
never the sampler's. Run again, it queues once more each point none of whose trials
finished, runs or waits (every one failed), so each point is finished once however the
sweep was interrupted, failed or resumed; `--noretry_failed` leaves those failed.
"""

import optuna

from estimator_dist import errors
from estimator_dist.experiments import storage as storage_lib

FINISHED = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
ACTIVE = (optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)


def is_finished(trial) -> bool:
  """Complete, pruned, or diverged (failed by its values: a result, not an error)."""
  return trial.state in FINISHED or (trial.state == optuna.trial.TrialState.FAIL and
                                     bool(trial.user_attrs.get("diverged")))


def point_trials(study):
  """{point: its trials (surplus ones left out)} of a grid or --zip sweep, in the order
  the points were queued; a point is its values as sorted (name, value) pairs."""
  trials = study.get_trials(deepcopy=False)
  found = {_point(t.system_attrs["fixed_params"]): [] for t in trials
           if "fixed_params" in t.system_attrs}
  for t in trials:
    # A waiting trial has no params yet; the values it was queued with say its point.
    point = _point(t.system_attrs.get("fixed_params") or t.params)
    if point in found and not t.user_attrs.get("surplus"):
      found[point].append(t)
  return found


def failed_points(study):
  """{point: its trials} of the points none of whose trials finished, runs or waits:
  every trial of theirs failed."""
  return {point: trials for point, trials in point_trials(study).items()
          if not any(is_finished(t) or t.state in ACTIVE for t in trials)}


def queue_again(study, *, options):
  """Queues once more each failed point of a sweep run again (unless --noretry_failed):
  before, nothing ran a failed point again and the sampler ran another point twice."""
  queued = point_trials(study)
  if len(queued) != options.trial_count:  # The points were fixed when it was created.
    raise errors.ConfigError(
        f"the sweep in {options.storage_url} runs {len(queued)} points of its "
        f"{'zipped lists' if options.zip else 'grid'}; --trials={options.trials} asks for "
        f"{options.trial_count}. Run it again with --trials={len(queued)}, or give a new "
        f"--sweep_dir (or --storage) for a new sweep.")
  if options.retry_failed:
    for point in failed_points(study):
      study.enqueue_trial(dict(point))


def repeats_a_point(study, trial) -> bool:
  """Whether `trial` is not needed: the sampler made its values (another runner took the
  last queued point first), or another trial of its point finished, or runs or waits
  ahead of it (runners that queued a failed point again at the same moment)."""
  frozen = storage_lib.stored(study, trial)
  if "fixed_params" not in frozen.system_attrs:
    return True
  others = point_trials(study).get(_point(frozen.system_attrs["fixed_params"]), [])
  return any(is_finished(t) or (t.state in ACTIVE and t.number < trial.number)
             for t in others if t.number != trial.number)


def _point(params):
  return tuple(sorted(params.items()))
