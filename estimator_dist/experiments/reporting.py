"""A trial's evaluations, reported to the study while its job runs; pruning asked of it.

Every evaluation of the job (beside training on the chief, or by the evaluator task)
lands in model_dir/eval. The sweep reads each new one, reports its metric and step to
the study, and asks the pruner; on a prune it leaves a stop request in the model_dir,
which the job's chief watches (`task.early_stopping.requested_stop`) and which stops every
task at one step. The job needs no database connection, and the program no change.
"""

import os

import optuna

from estimator_dist import errors
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import stop_files
from estimator_dist.experiments import storage as storage_lib


def check_metric(metric, results):
  """ConfigError when evaluations exist but none has `metric`."""
  if results and not any(metric in m for m in results.values()):
    names = sorted(set().union(*(m.keys() for m in results.values())) - {"global_step"})
    raise errors.ConfigError(
        f"the sweep optimises eval metric '{metric}', but the program's evaluations report "
        f"only {names}; pass one of them as --metric.")


class Reporter:
  """Reports one trial's evaluations to its study and asks its pruner."""

  def __init__(self, trial: optuna.trial.Trial, *, model_dir, metric, after_step=None):
    """`after_step`: evaluations of earlier steps (a PBT member's earlier segments) are
    not this trial's."""
    self._trial, self._model_dir, self._metric = trial, model_dir, metric
    self._after_step = -1 if after_step is None else after_step
    frozen = storage_lib.stored(trial.study, trial)
    self._reported = set(frozen.intermediate_values)  # A retried trial inherits them.
    self.prune_requested = False
    self._files, self._results = None, {}
    remove_request(model_dir)

  def poll(self):
    """Reports new evaluations; on a prune, asks the job to stop. Returns the results."""
    files = _files(os.path.join(self._model_dir, "eval"))
    if files != self._files:  # Read the event files again only when they changed.
      # TensorBoard's protos once there are evaluations: not in a sweep's --help.
      from estimator_dist.outputs import event_files  # pylint: disable=g-import-not-at-top
      self._files, self._results = files, event_files.eval_metrics(self._model_dir)
    results = {step: m for step, m in self._results.items() if step > self._after_step}
    check_metric(self._metric, self._results)
    new = sorted(step for step in results if step not in self._reported)
    for step in new:
      self._trial.report(float(results[step][self._metric]), step)
      self._reported.add(step)
    if new and not self.prune_requested and self._trial.should_prune():
      self.prune_requested = True
      step = new[-1]
      with open(os.path.join(self._model_dir, stop_files.STOP_REQUEST), "w") as f:
        f.write(f"the sweep's pruner stopped trial {self._trial.number} (eval {self._metric} "
                f"{results[step][self._metric]:g} at step {step})")
    return results

  def final_value(self, results):
    """The metric of the last evaluation; ConfigError when the job evaluated nothing."""
    points = [(step, m[self._metric]) for step, m in results.items() if self._metric in m]
    if not points:
      raise errors.ConfigError(
          f"trial {self._trial.number} ended without an evaluation in "
          f"{self._model_dir}/eval; the sweep needs the program to evaluate "
          f"(train_and_evaluate with an eval_input_fn).")
    return float(max(points)[1])


def _files(directory):
  """(name, size, mtime) of each file in `directory`: what changes when one is written."""
  if checkpoint_names.is_url(directory):
    return object()  # A remote file system: read it every time.
  try:
    return sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(directory))
  except FileNotFoundError:
    return []


def remove_request(model_dir):
  try:
    os.remove(os.path.join(model_dir, stop_files.STOP_REQUEST))
  except FileNotFoundError:
    pass
