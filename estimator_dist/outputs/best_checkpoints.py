"""The best N checkpoints of a job by an eval metric, kept apart from the newest ones.

Estimator keeps the newest `keep_checkpoint_max` checkpoints and deletes the rest, the
best one too. With `BestCheckpoints(keep=N, metric=..., direction=...)` the process that
evaluates (the chief, or the evaluator task) copies each evaluated checkpoint that ranks
among the best N into `model_dir/best/`, beside a JSON record of its step, metric value
and every eval metric, and removes the one it displaces (`task.best_checkpoint_keeper`).
Estimator never deletes there; the directory's `checkpoint` file names the best first, so
`tf.train.latest_checkpoint(model_dir + "/best")` is the best checkpoint, and `best/` can be
given to `warm_start_from`. This module reads the records without TensorFlow (the sweep's
report names each trial's best).
"""

import dataclasses
import difflib
import glob
import json
import os
from typing import Optional

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.contract import checkpoint_names
from estimator_dist.option_flags import option

DIRECTIONS = ("maximize", "minimize")
DIRECTORY = "best"


@dataclasses.dataclass(frozen=True, kw_only=True)
class BestCheckpoints:
  """Keep the `keep` best checkpoints by eval `metric` ("loss", "accuracy", ...):
  `direction` "maximize" or "minimize" (needed for any metric but loss, which minimizes).
  A program's flags make none when --keep_best_checkpoints is 0, the flag's default."""
  keep: int = option(
      kind="integer", name="keep_best_checkpoints", flag_default=0, lower_bound=0,
      help="Keep the best this many checkpoints by --best_metric in model_dir/best, which "
      "keep_checkpoint_max never deletes; 0: none.")
  metric: str = option("loss", kind="string", name="best_metric", help="The eval metric "
                       "that ranks the checkpoints --keep_best_checkpoints keeps.")
  direction: Optional[str] = option(
      None, kind="enum", values=DIRECTIONS, name="best_direction", help="Whether a higher "
      "--best_metric is better (maximize) or a lower (minimize; the default for loss only).")

  def __post_init__(self):
    option_flags.check_declared(self)
    errors.check_positive("--keep_best_checkpoints", self.keep)  # Its flag's 0 is "none".
    if self.direction is None:
      if self.metric != "loss":
        raise errors.ConfigError(
            f"keeping the best checkpoints by {self.metric!r} needs its direction: "
            f"--best_direction=maximize (higher is better) or minimize.")
      object.__setattr__(self, "direction", "minimize")

  def better(self, value, than):
    return value > than if self.direction == "maximize" else value < than


def read(directory):
  """The records of the checkpoints kept in `directory` (model_dir/best), best first."""
  records = []
  find, opener = glob.glob, open
  if checkpoint_names.is_url(directory):  # A URL: TensorFlow's file systems read it.
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    find, opener = tf.io.gfile.glob, tf.io.gfile.GFile
  for path in find(os.path.join(directory, "*.json")):
    try:
      with opener(path) as f:
        records.append(json.load(f))
    except Exception:  # pylint: disable=broad-except  # Being written or removed.
      continue
  return sorted(records, key=rank_key(records[0]["direction"])) if records else []


def check_reported(best, metrics):
  """ConfigError when an evaluation's `metrics` (its names) lack the one `best` ranks by:
  a misspelt --best_metric would keep nothing."""
  if best.metric in metrics:
    return
  reported = sorted(m for m in metrics if m != "global_step")
  close = difflib.get_close_matches(best.metric, reported, n=1)
  raise errors.ConfigError(
      f"keeping the best checkpoints by eval metric {best.metric!r}, but the model's "
      f"evaluations report only {reported}: give one of them as --best_metric"
      f"{f' (--best_metric={close[0]}?)' if close else ''}.")


def check_kept(kept, best, directory):
  """ConfigError when `directory` keeps checkpoints ranked by another metric or direction."""
  for record in kept[:1]:
    if (record["metric"], record["direction"]) != (best.metric, best.direction):
      raise errors.ConfigError(
          f"{directory} keeps the best checkpoints by {record['metric']} "
          f"({record['direction']}), not by {best.metric} ({best.direction}): give "
          f"--best_metric={record['metric']} --best_direction={record['direction']}, or "
          f"move that directory away.")


def rank_key(direction):
  sign = -1 if direction == "maximize" else 1
  return lambda r: (sign * r["value"], r["step"])  # Equal values: the earlier first.


