"""`EarlyStopping`: when the chief stops every task (`early_stopping` does the stopping).

Without TensorFlow: the training flags are made from it, so a command's --help lists them
where TensorFlow is not installed. Reading the evaluations (`reason`) imports it.
"""

import dataclasses
from typing import Optional

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.option_flags import option

MODES = ("min", "max")


@dataclasses.dataclass(frozen=True, kw_only=True)
class EarlyStopping:
  """Stop when `metric` (an eval metric: "loss", "accuracy", ...) has not improved
  (`mode` "min": decreased; "max": increased) for `patience_steps` global steps."""
  metric: str = option("loss", kind="string", name="early_stopping_metric",
                       help="Eval metric early stopping watches.")
  mode: str = option("min", kind="enum", values=MODES, name="early_stopping_mode",
                     help="min: the metric should decrease; max: increase.")
  patience_steps: int = option(
      kind="integer", name="early_stopping_patience_steps", flag_default=None, lower_bound=1,
      help="Stop every task when the eval metric has not improved for this many steps.")

  def __post_init__(self):
    option_flags.check_declared(self)

  def reason(self, eval_dir) -> Optional[str]:
    """Why training should stop now, from the evaluations in eval_dir; None to go on."""
    # Estimator's reader, on TensorFlow's file systems (a model_dir may be a URL).
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from tensorflow_estimator.python.estimator import early_stopping as tf_early_stopping  # pylint: disable=g-import-not-at-top
    results = tf_early_stopping.read_eval_metrics(eval_dir) if tf.io.gfile.isdir(
        eval_dir) else {}
    points = [(step, m[self.metric]) for step, m in results.items() if self.metric in m]
    if not points:
      if results:
        raise errors.ConfigError(
            f"early stopping watches eval metric '{self.metric}', but the evaluations "
            f"have only {sorted(next(iter(results.values())))}. Name one of them.")
      return None
    better = min if self.mode == "min" else max
    best_step, best = better(reversed(points), key=lambda p: p[1])
    last_step = points[-1][0]
    if last_step - best_step < self.patience_steps:
      return None
    return (f"eval {self.metric} has not {'decreased' if self.mode == 'min' else 'increased'} "
            f"for {last_step - best_step} steps (best {best:g} at step {best_step}, patience "
            f"{self.patience_steps})")
