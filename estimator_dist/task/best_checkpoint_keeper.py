"""Keeps the best checkpoints (`best_checkpoints`) as the job's evaluations rank them.

While a checkpoint is evaluated it is pinned (hard links in `best/.evaluating`), so
training that saves newer ones meanwhile cannot delete it from under the evaluation or
the copy. Where links cannot be made (another file system, a URL) it is read in place,
and a checkpoint deleted meanwhile is skipped as before.
"""

import contextlib
import json
import os
import shutil

import tensorflow as tf
from absl import logging

from estimator_dist import errors
from estimator_dist.task import best_checkpoints

_PINS = ".evaluating"


class Keeper(tf.estimator.Exporter):
  """The exporter that keeps the best checkpoints: `Evaluations` pins each checkpoint
  while it is evaluated (`pinned`), then `export` keeps it or not."""

  def __init__(self, best: best_checkpoints.BestCheckpoints):
    self.best = best

  @property
  def name(self):
    return "best_checkpoints"

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    """Copies `checkpoint_path` into model_dir/best when it ranks in the best N; its new
    path, or None."""
    del export_path, is_the_final_export  # Kept in model_dir/best, final or not.
    directory = os.path.join(estimator.model_dir, best_checkpoints.DIRECTORY)
    metric = self.best.metric
    if metric not in eval_result:
      raise errors.ConfigError(
          f"keeping the best checkpoints by eval metric {metric!r}, but the evaluations have "
          f"only {sorted(eval_result)}: name one of them (--best_metric).")
    record = {"step": int(eval_result["global_step"]), "metric": metric,
              "value": float(eval_result[metric]), "direction": self.best.direction,
              "metrics": {k: _number(v) for k, v in eval_result.items()}}
    kept = best_checkpoints.read(directory)
    best_checkpoints.check_kept(kept, self.best, directory)
    if any(r["step"] == record["step"] for r in kept):
      return None  # Evaluated again (the final evaluation of a resumed job).
    if len(kept) >= self.best.keep and not self.best.better(record["value"],
                                                            kept[-1]["value"]):
      return None
    record["checkpoint"] = os.path.basename(checkpoint_path)
    kept_path = _copy(checkpoint_path, directory, record)
    ranked = sorted([*kept, record], key=best_checkpoints.rank_key(self.best))
    for dropped in ranked[self.best.keep:]:
      _remove(directory, dropped)
    ranked = ranked[:self.best.keep]
    tf.compat.v1.train.update_checkpoint_state(
        directory, os.path.join(directory, ranked[0]["checkpoint"]),
        all_model_checkpoint_paths=[os.path.join(directory, r["checkpoint"])
                                    for r in reversed(ranked)])
    logging.info("estimator_dist: kept %s (%s %s, step %d) among the best %d checkpoints",
                 kept_path, metric, record["value"], record["step"], self.best.keep)
    return kept_path


def _number(value):
  try:
    return float(value)
  except (TypeError, ValueError):
    return str(value)


def _copy(checkpoint_path, directory, record):
  """Copies the checkpoint's files, then its record (which marks the copy complete)."""
  tf.io.gfile.makedirs(directory)
  for source in tf.io.gfile.glob(checkpoint_path + ".*"):
    target = os.path.join(directory, os.path.basename(source))
    tf.io.gfile.copy(source, target + ".tmp", overwrite=True)
    tf.io.gfile.rename(target + ".tmp", target, overwrite=True)
  target = os.path.join(directory, record["checkpoint"])
  with tf.io.gfile.GFile(target + ".json.tmp", "w") as f:
    json.dump(record, f, indent=1)
  tf.io.gfile.rename(target + ".json.tmp", target + ".json", overwrite=True)
  return target


def _remove(directory, record):
  path = os.path.join(directory, record["checkpoint"])
  tf.io.gfile.remove(path + ".json")  # First: a checkpoint without it is not kept.
  for name in tf.io.gfile.glob(path + ".*"):
    tf.io.gfile.remove(name)


@contextlib.contextmanager
def pinned(checkpoint_path, model_dir):
  """The path to read `checkpoint_path` from while the body runs: hard links that
  survive its deletion, or the path itself where none can be made."""
  pins = os.path.join(model_dir, best_checkpoints.DIRECTORY, _PINS)
  if "://" in model_dir:
    yield checkpoint_path
    return
  shutil.rmtree(pins, ignore_errors=True)  # One evaluation at a time, per job.
  try:
    os.makedirs(pins)
    for source in tf.io.gfile.glob(checkpoint_path + ".*"):
      os.link(source, os.path.join(pins, os.path.basename(source)))
    readable = os.path.join(pins, os.path.basename(checkpoint_path))
    if not os.path.exists(readable + ".index"):
      readable = checkpoint_path  # Deleted already: its evaluation says so.
  except OSError as e:
    logging.info("estimator_dist: %s is read in place (%s)", checkpoint_path, e)
    readable = checkpoint_path
  try:
    yield readable
  finally:
    shutil.rmtree(pins, ignore_errors=True)
