"""The sweep's pruners: median (ours, below), Optuna's hyperband and ASHA, or none.

  median: stops a trial whose best value so far is worse than the median of the finished
    trials at its step; it waits for --prune_after_trials finished trials, so it saves
    least in a short sweep and most when many trials follow a few finished ones.
  asha: asynchronous successive halving (Optuna's SuccessiveHalvingPruner). Rungs at
    --min_resource_steps x --reduction_factor^k steps; at each, a trial goes on only if it
    is in the top 1/reduction_factor of the trials that reached that rung so far. It
    never waits for a rung to fill (a free slot starts the next trial at once), and it
    prunes from the second trial on (without --min_resource_steps, once Optuna has
    derived the rungs from a finished trial): pick it when trials are many and long, and
    early rankings hold.
  hyperband: several ASHA brackets of different min resources (Optuna's
    HyperbandPruner), for when how early a ranking holds is unknown; it needs more trials
    than ASHA to fill its brackets.

The median pruner compares trials whose evaluations fell on different steps.

A job evaluates whichever checkpoint is newest when its evaluator is free, so two trials of
one sweep evaluate at different steps (100, 300, 500 beside 200, 400, 600). Optuna's
MedianPruner compares a trial's step only with the same step of finished trials and, when no
finished trial has it, never prunes: such a sweep silently spends the whole budget. Here each
finished trial counts with its latest evaluation at or before the step asked about, what it
had reached by then: for a metric that improves with training, a bar no higher than at
the step itself, so a trial is not pruned for where its evaluations fell.
"""

import math

import numpy as np
import optuna
from optuna.trial import TrialState

from estimator_dist import errors


NAMES = ("none", "median", "hyperband", "asha")
_RUNGS = ("asha", "hyperband")


def check_rungs(pruner, *, min_resource_steps, reduction_factor):
  """ConfigError for rung settings that the pruner has not, or that no rung can take."""
  given = [f"--{name}" for name, value in (("min_resource_steps", min_resource_steps),
                                           ("reduction_factor", reduction_factor))
           if value is not None]
  if given and pruner not in _RUNGS:
    raise errors.ConfigError(f"{' and '.join(given)} set the rungs of --pruner=asha or "
                             f"hyperband; --pruner={pruner} has none.")
  errors.check_positive("min_resource_steps", min_resource_steps, allow_none=True)
  if reduction_factor is not None and not (isinstance(reduction_factor, int) and
                                           reduction_factor >= 2):
    raise errors.ConfigError(f"--reduction_factor ({reduction_factor!r}) must be an integer "
                             f"of at least 2: the share of trials a rung keeps is 1/it.")


def check_first_rung(pruner, *, min_resource_steps, reduction_factor, last_step):
  """ConfigError when the first rung of asha or hyperband (`min_resource_steps`, where
  hyperband's first bracket starts and its others later) is at or past `last_step`, the
  step the trials train to: no trial is judged before it ends, so nothing is pruned and
  every trial runs to its end, silently. `last_step` None: not known, not checked."""
  if pruner not in _RUNGS or None in (min_resource_steps, last_step) or (
      min_resource_steps < last_step):
    return
  factor = reduction_factor or (4 if pruner == "asha" else 3)  # Optuna's defaults.
  raise errors.ConfigError(
      f"--min_resource_steps={min_resource_steps} puts the first rung of --pruner={pruner} at "
      f"or past the last step of the trials (the program's --train_steps={last_step}), so "
      f"it would prune no trial: give a --min_resource_steps below {last_step} (e.g. "
      f"--min_resource_steps={max(1, last_step // factor)}), or more --train_steps.")


def of(options):
  """The pruner of a sweep's `SweepOptions`."""
  rungs = {k: v for k, v in (("reduction_factor", options.reduction_factor),
                             ("min_resource", options.min_resource_steps)) if v is not None}
  if options.pruner == "median":
    return StepAlignedMedianPruner(n_startup_trials=options.prune_after_trials,
                                   n_warmup_steps=options.prune_after_steps)
  if options.pruner == "asha":
    return optuna.pruners.SuccessiveHalvingPruner(**rungs)
  if options.pruner == "hyperband":
    return optuna.pruners.HyperbandPruner(**rungs)
  return optuna.pruners.NopPruner()


class StepAlignedMedianPruner(optuna.pruners.BasePruner):
  """Prunes a trial whose best value so far is worse than the finished trials' median."""

  def __init__(self, *, n_startup_trials, n_warmup_steps):
    self._n_startup_trials, self._n_warmup_steps = n_startup_trials, n_warmup_steps

  def prune(self, study, trial):
    step = trial.last_step
    finished = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if step is None or step < self._n_warmup_steps or not finished or \
        len(finished) < self._n_startup_trials:
      return False
    reached = [_value_at(t.intermediate_values, step) for t in finished]
    reached = [v for v in reached if not math.isnan(v)]
    if not reached:
      return False
    maximize = study.direction == optuna.study.StudyDirection.MAXIMIZE
    values = np.asarray(list(trial.intermediate_values.values()), dtype=float)
    if np.isnan(values).all():
      return True  # Only NaN so far: a diverged trial.
    best = np.nanmax(values) if maximize else np.nanmin(values)
    median = float(np.median(reached))
    return best < median if maximize else best > median


def _value_at(values, step):
  """The value at the latest step at or before `step`; NaN when there is none."""
  earlier = [s for s in values if s <= step]
  return float(values[max(earlier)]) if earlier else math.nan
