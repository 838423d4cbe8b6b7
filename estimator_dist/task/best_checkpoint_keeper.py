"""Keeps the best checkpoints (`best_checkpoints`) as the job's evaluations rank them.

While a checkpoint is evaluated it is pinned (hard links in `best/.evaluating`), so
training that saves newer ones meanwhile cannot delete it from under the evaluation or
the copy. Where links cannot be made (another file system, a URL) it is read in place,
and a checkpoint deleted meanwhile is skipped as before.
"""

import contextlib
import json
import math
import os
import re
import shutil
import time

import tensorflow as tf
from absl import logging
from tensorflow_estimator.python.estimator import early_stopping as tf_early_stopping

from estimator_dist import command_line
from estimator_dist.contract import checkpoint_names
from estimator_dist.outputs import best_checkpoints
from estimator_dist.outputs import model_dir_check

_PINS = ".evaluating"
# tf.compat.v1.train.Saver names a checkpoint in the `checkpoint` file, then writes its
# .meta (unless RunConfig's checkpoint_save_graph_def is False): an evaluation may start
# in between. A checkpoint's .meta comes this soon after its .index, or never.
_META_WAIT_SECS = 10
_CHECKPOINT_FILE = re.compile(r"^(model\.ckpt-\d+)\.")
# The files of a checkpoint, without those being written (`name.tmp<id>`, renamed whole).
_PARTS = re.compile(r"\.(index|meta|data-\d+-of-\d+)$")


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
    """Keeps `checkpoint_path` in model_dir/best when it ranks in the best N; its new
    path, or None."""
    del export_path, is_the_final_export  # Kept in model_dir/best, final or not.
    directory = os.path.join(estimator.model_dir, best_checkpoints.DIRECTORY)
    best, metric = self.best, self.best.metric
    best_checkpoints.check_reported(best, eval_result)
    record = {"step": int(eval_result["global_step"]), "metric": metric,
              "value": float(eval_result[metric]), "direction": best.direction,
              "metrics": {k: _number(v) for k, v in eval_result.items()},
              "checkpoint": os.path.basename(checkpoint_path)}
    kept = best_checkpoints.read(directory)
    best_checkpoints.check_kept(kept, best, directory)
    if (not math.isfinite(record["value"]) or
        any(r["step"] == record["step"] for r in kept) or  # The final evaluation, again.
        (len(kept) >= best.keep and not best.better(record["value"],
                                                    kept[best.keep - 1]["value"]))):
      return None
    if not _copied(checkpoint_path, directory, record):
      logging.info(command_line.line("%s was deleted before it could be kept"), checkpoint_path)
      return None
    ranked = sorted([*kept, record], key=best_checkpoints.rank_key(best.direction))
    # Relative names: the directory may be moved or copied.
    tf.compat.v1.train.update_checkpoint_state(
        directory, ranked[0]["checkpoint"],
        all_model_checkpoint_paths=[r["checkpoint"] for r in reversed(ranked[:best.keep])])
    for dropped in ranked[best.keep:]:
      _remove(directory, dropped)
    kept_path = os.path.join(directory, record["checkpoint"])
    logging.info(command_line.line("kept %s (%s %s, step %d) among the best %d checkpoints"),
                 kept_path, metric, record["value"], record["step"], best.keep)
    return kept_path


def metric_watch(best, model_dir):
  """A stop condition for the chief's decision (`early_stopping.decision`) that never
  asks to stop, but raises `check_reported`'s ConfigError once the evaluations in
  model_dir/eval lack the metric `best` ranks by (None without `best`). A decision that
  fails stops every task at the next agreement: a misspelt --best_metric ends the job at
  its first evaluation, where the keeper alone (on the chief, beside training) let it
  train to the end. Once the metric was seen it reads nothing more."""
  if best is None:
    return None
  eval_dir, seen = os.path.join(model_dir, "eval"), []

  def watch():
    if seen or not tf.io.gfile.isdir(eval_dir):
      return None
    try:
      evaluations = tf_early_stopping.read_eval_metrics(eval_dir)
    except tf.errors.OpError:  # A record still being written: read again next time.
      return None
    if evaluations:
      best_checkpoints.check_reported(best, list(evaluations.values())[-1])
      seen.append(True)
    return None
  return watch


def _number(value):
  try:
    return float(value)
  except (TypeError, ValueError):
    return str(value)


def _copied(checkpoint_path, directory, record):
  """Links (else copies) the checkpoint's files, then writes its record, which marks the
  copy complete; False, leaving nothing, when a file went missing meanwhile."""
  tf.io.gfile.makedirs(directory)
  sources = _parts(checkpoint_path)
  names = [os.path.basename(source) for source in sources]
  if not any(n.endswith(".index") for n in names) or not any(".data-" in n for n in names):
    return False
  targets = []
  try:
    for source, name in zip(sources, names):
      target = os.path.join(directory, name)
      targets.append(target + ".tmp")
      _link_or_copy(source, target + ".tmp")
      tf.io.gfile.rename(target + ".tmp", target, overwrite=True)
      targets[-1] = target
  except (OSError, tf.errors.OpError):
    for target in targets:
      _discard(target)
    if all(tf.io.gfile.exists(source) for source in sources):
      raise  # Not deleted meanwhile: best/ cannot take it, which its error says.
    return False
  target = os.path.join(directory, record["checkpoint"])
  with tf.io.gfile.GFile(target + ".json.tmp", "w") as f:
    json.dump(record, f, indent=1)
  tf.io.gfile.rename(target + ".json.tmp", target + ".json", overwrite=True)
  return True


def _link_or_copy(source, target):
  if not checkpoint_names.is_url(target):
    try:
      _discard(target)
      os.link(source, target)  # The pinned file: no second copy on disk.
      return
    except OSError:
      pass
  tf.io.gfile.copy(source, target, overwrite=True)


def _remove_file(path):
  try:
    tf.io.gfile.remove(path)
  except tf.errors.NotFoundError:
    pass


def _discard(path):
  """Removes `path` if it can: a cleanup, which must not raise over the error that made
  it (a read-only file system refuses to remove even a file that is not there)."""
  try:
    tf.io.gfile.remove(path)
  except (OSError, tf.errors.OpError):
    pass


def _remove(directory, record):
  path = os.path.join(directory, record["checkpoint"])
  _remove_file(path + ".json")  # First: a checkpoint without it is not kept.
  for name in tf.io.gfile.glob(path + ".*"):
    _remove_file(name)


def prepare(model_dir, best):
  """Before training: ConfigError when model_dir/best cannot be written (a read-only
  mount: `model_dir_check`), or keeps checkpoints ranked otherwise than `best` ranks them
  (a rerun or a sweep changed the metric); else removes what a keeper killed in the middle
  left there: its pins, its temporary files, and checkpoint files without a record."""
  model_dir_check.check_best(model_dir)
  directory = os.path.join(model_dir, best_checkpoints.DIRECTORY)
  kept = best_checkpoints.read(directory)
  best_checkpoints.check_kept(kept, best, directory)
  if checkpoint_names.is_url(model_dir) or not os.path.isdir(directory):
    return
  shutil.rmtree(os.path.join(directory, _PINS), ignore_errors=True)
  recorded = {r["checkpoint"] for r in kept}
  for name in os.listdir(directory):
    stem = _CHECKPOINT_FILE.match(name)
    if ".tmp" in name or (stem and not name.endswith(".json") and
                                 stem.group(1) not in recorded):
      os.remove(os.path.join(directory, name))


@contextlib.contextmanager
def pinned(checkpoint_path, model_dir):
  """The path to read `checkpoint_path` from while the body runs: hard links that
  survive its deletion, or the path itself where none can be made."""
  pins = os.path.join(model_dir, best_checkpoints.DIRECTORY, _PINS)
  if checkpoint_names.is_url(model_dir):
    yield checkpoint_path
    return
  shutil.rmtree(pins, ignore_errors=True)  # One evaluation at a time, per job.
  try:
    os.makedirs(pins)
    for source in _parts(checkpoint_path):
      os.link(source, os.path.join(pins, os.path.basename(source)))
    readable = os.path.join(pins, os.path.basename(checkpoint_path))
    if not os.path.exists(readable + ".index"):
      readable = checkpoint_path  # Deleted already: its evaluation says so.
    elif not os.path.exists(readable + ".meta"):
      _pin_meta(checkpoint_path, readable)
  except OSError as e:
    logging.info(command_line.line("%s is read in place (%s)"), checkpoint_path, e)
    readable = checkpoint_path
  try:
    yield readable
  finally:
    shutil.rmtree(pins, ignore_errors=True)


def _parts(checkpoint_path):
  return [path for path in tf.io.gfile.glob(checkpoint_path + ".*") if _PARTS.search(path)]


def _pin_meta(checkpoint_path, readable):
  """Links the .meta the Saver writes after naming the checkpoint (the keeper keeps the
  whole checkpoint), while it may still come: up to _META_WAIT_SECS after the .index was
  written, by the file system's clock (the pins' directory, made just now, tells its now)."""
  try:
    left = (os.path.getmtime(readable + ".index") + _META_WAIT_SECS -
            os.path.getmtime(os.path.dirname(readable)))
  except OSError:
    return
  deadline = time.monotonic() + left
  while time.monotonic() < deadline and os.path.exists(checkpoint_path + ".index"):
    try:
      os.link(checkpoint_path + ".meta", readable + ".meta")
      return
    except FileNotFoundError:
      time.sleep(0.05)
  logging.info(command_line.line("%s has no .meta file: a kept copy lacks it"), checkpoint_path)
