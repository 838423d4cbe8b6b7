"""A checkpoint's names and steps, read without TensorFlow (the launcher and the sweep
runner, which never import it, read them too), and the directory of the toolkit's own
files in a model_dir. Whether a checkpoint is complete is `outputs.checkpoints`'
question, which needs TensorFlow."""

import os
import re

# The toolkit's own files in a model_dir: the tasks' logs, the learning rate's record, the
# MLflow run's parameters, SLURM's and Spark's mailboxes.
TOOLKIT_DIR = "estimator_dist"
_INDEX = "checkpoint"
_CHECKPOINT = re.compile(r"^model\.ckpt-(\d+)\.index$")
_LATEST = re.compile(r'^model_checkpoint_path:\s*"([^"]+)"', re.MULTILINE)


def is_url(path):
  """Whether `path` names a directory on one of TensorFlow's file systems (gs://,
  hdfs://, s3://) rather than a local one: what `os` cannot lock, link, list or measure."""
  return "://" in path


def step_of(prefix):
  """The global step of a checkpoint `prefix` (.../model.ckpt-N)."""
  return int(prefix.rsplit("-", 1)[1])


def step_of_index(name):
  """The global step of a checkpoint's index file `name` (model.ckpt-N.index), else None."""
  match = _CHECKPOINT.match(name)
  return int(match.group(1)) if match else None


def latest_name(model_dir):
  """The file name of the checkpoint the local `model_dir`'s index names (where a program
  restores from), or None; OSError when there is no index."""
  with open(os.path.join(model_dir, _INDEX)) as f:
    latest = _LATEST.search(f.read())
  return os.path.basename(latest.group(1)) if latest else None
