"""Time to a target eval accuracy, from the checkpoints a job kept."""

import glob
import os
import re

import estimator_dist as ed
from benchmarks import models
from model_zoo import data


def checkpoints(model_dir):
  """(step, checkpoint path, wall time written) of every checkpoint, by step."""
  found = []
  for index in glob.glob(os.path.join(model_dir, "model.ckpt-*.index")):
    path = index[:-len(".index")]
    found.append((int(re.search(r"-(\d+)$", path).group(1)), path, os.path.getmtime(index)))
  return sorted(found)


def time_to_accuracy(model, model_dir, start, target, batch_size=256):
  """(seconds from `start`, step, accuracy) of the first checkpoint reaching `target`.

  None when no checkpoint reached it.
  """
  _, (x_eval, y_eval) = models.load(model, "digits")
  eval_input_fn = data.input_fn(x_eval, y_eval, shuffle=False)
  for step, path, written in checkpoints(model_dir):
    if step == 0:
      continue
    metrics = ed.evaluate(models.MODELS[model].module.model_fn, eval_input_fn,
                          model_dir=model_dir, checkpoint_path=path,
                          params={"batch_size": batch_size})
    if metrics["accuracy"] >= target:
      return written - start, step, float(metrics["accuracy"])
  return None
