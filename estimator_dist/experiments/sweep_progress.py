"""How far a running sweep is, said every --progress_secs by its runner.

  estimator-dist sweep: progress: 5 of 12 finished (3 complete, 1 pruned, 1 diverged),
      2 running, 0 failed; best accuracy 0.9861 (trial 3); ETA 4 min

(one line). The counts are the study's, so runners that share a study (a SLURM array)
each see all of them. The ETA is the mean time of a finished trial times the rounds the
trials still to finish take, as many at once as run now (at least this runner's).
"""

import math
import time

import optuna

from estimator_dist import command_line
from estimator_dist.experiments import results
from estimator_dist.watching import live_progress

_STATES = ("complete", "pruned", "diverged")


class SweepProgress:
  """Prints the progress of a sweep from its study."""

  def __init__(self, study, *, options, slots, out):
    self._study, self._options, self._slots, self._out = study, options, slots, out
    self._next = time.monotonic() + options.progress_secs

  def tick(self):
    if not self._options.progress_secs or time.monotonic() < self._next:
      return
    self._next = time.monotonic() + self._options.progress_secs
    line = describe(self._study, self._options, self._slots)
    command_line.write(self._out, f"progress: {line}", command="sweep")


def describe(study, options, slots):
  """The text of one progress line."""
  trials = [t for t in study.get_trials(deepcopy=False) if not t.user_attrs.get("surplus")]
  counts = dict.fromkeys(_STATES + ("running", "fail"), 0)
  seconds = []
  for trial in trials:
    state = results.state_of(trial)
    counts[state] = counts.get(state, 0) + 1
    if state in _STATES and trial.user_attrs.get("seconds"):
      seconds.append(trial.user_attrs["seconds"])
  finished = sum(counts[s] for s in _STATES)
  text = (f"{finished} of {options.trial_count} finished ("
          + ", ".join(f"{counts[s]} {s}" for s in _STATES) + f"), {counts['running']} "
          f"running, {counts['fail']} failed")
  complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
  if complete:
    best = study.best_trial
    text += f"; best {options.metric} {best.value:.4g} (trial {best.number})"
  left = options.trial_count - finished
  if seconds and left > 0:  # Rounds of the trials at once (a SLURM array's: all running).
    rounds = math.ceil(left / max(slots, counts["running"], 1))
    text += f"; ETA {live_progress.duration(rounds * sum(seconds) / len(seconds))}"
  return text

