"""The median pruner, comparing trials whose evaluations fell on different steps.

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
