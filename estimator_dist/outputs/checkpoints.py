"""Checkpoints a job can resume from: complete ones, of this model.

- `resume_point` runs before a job starts (the launcher, before every attempt; a chief
  started otherwise, before it trains). It makes the `checkpoint` index name the newest
  checkpoint that is complete (index, data that reads in full, graph) and moves the
  newer ones that are not into `unreadable/`, so no restart enters them again.
- `kept_complete` wraps the chief's training: when it fails (a save on a full disk), the
  index is made to name the newest complete checkpoint again, the save's leftovers are
  removed, and a full disk is named with the fix.
- `FitsTheModel` refuses, before a session restores anything, a checkpoint whose
  variables are not the model's (a model_dir of another model), naming the first
  difference.
"""

import contextlib
import errno
import os
import re
import shutil

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from estimator_dist import errors
from estimator_dist.contract import checkpoint_names

# What TensorFlow leaves of a write that failed: atomic writes' `NAME.tmp<hex>`, a
# tensor file's `.tempstate<digits>`, a sharded save's `PREFIX_temp` directory.
_TEMPORARY = re.compile(r"^(checkpoint|graph\.pbtxt|model\.ckpt-\d+\.[\w-]+)\.tmp[0-9a-f]{32}$|"
                        r"^model\.ckpt-\d+\..*\.tempstate\d+$|^model\.ckpt-\d+_temp$")
UNREADABLE_DIR = "unreadable"
_OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"


def _checkpoints(model_dir):
  """[(step, prefix)] of the checkpoints in `model_dir`, newest first."""
  found = []
  for name in tf.io.gfile.listdir(model_dir) if tf.io.gfile.isdir(model_dir) else ():
    step = checkpoint_names.step_of_index(name)
    if step is not None:
      found.append((step, os.path.join(model_dir, name[:-len(".index")])))
  return sorted(found, reverse=True)


def complete(prefix):
  """Whether the checkpoint at `prefix` has its graph and reads in full."""
  if not tf.io.gfile.exists(prefix + ".meta"):
    return False
  try:
    reader = tf.train.load_checkpoint(prefix)
    for name in reader.get_variable_to_shape_map():
      reader.get_tensor(name)
    return True
  except (tf.errors.OpError, ValueError, RuntimeError, IndexError):  # IndexError: truncated
    return False


def resume_point(model_dir, log, *, discard_after=None):
  """The checkpoint training resumes from (None: the start), made the index's latest.

  `log(message)` names what was set aside; incomplete checkpoints of steps after
  `discard_after` (the remains of a save that failed) are deleted instead. Local
  model_dirs only: others are left alone.
  """
  if checkpoint_names.is_url(model_dir):
    return tf.train.latest_checkpoint(model_dir)
  found = _checkpoints(model_dir)
  latest = tf.train.latest_checkpoint(model_dir)
  good_step, good = next(((s, p) for s, p in found if complete(p)), (None, None))
  bad = [prefix for step, prefix in found if good is None or step > good_step]
  if not bad and latest == good:
    return good
  aside = os.path.join(model_dir, UNREADABLE_DIR)
  discarded = [prefix for step, prefix in found
               if prefix in bad and discard_after is not None and step > discard_after]
  for prefix in bad:
    for path in tf.io.gfile.glob(prefix + ".*"):
      if prefix in discarded:
        os.remove(path)
      else:
        os.makedirs(aside, exist_ok=True)
        shutil.move(path, os.path.join(aside, os.path.basename(path)))
  kept = [prefix for _, prefix in reversed(found) if prefix not in bad]
  if good:
    tf.compat.v1.train.update_checkpoint_state(model_dir, good,
                                               all_model_checkpoint_paths=kept)
  elif tf.io.gfile.exists(os.path.join(model_dir, "checkpoint")):
    os.remove(os.path.join(model_dir, "checkpoint"))
  named = ", ".join(os.path.basename(p) for p in bad) or latest or "none"
  log(f"checkpoint {named} cannot be read in full "
      f"({'deleted' if discarded else f'moved to {aside}'}); training resumes from "
      f"{good or 'the start'}")
  return good


@contextlib.contextmanager
def kept_complete(model_dir, log):
  """When training runs out of space, leaves `model_dir`'s index on a complete checkpoint.

  TensorFlow names a new checkpoint in the index before it writes its graph, and leaves
  temporary files when a write fails; a full disk then left an index no job could
  resume from. The remains of the failed save (TensorFlow's temporary files, and the
  incomplete checkpoints this run wrote) are deleted, which frees the space the index
  needs; older incomplete ones are moved aside as at every start.
  """
  started_at = latest_step(model_dir)
  try:
    yield
  except Exception as e:
    if not _out_of_space(e) or checkpoint_names.is_url(model_dir) or not os.path.isdir(model_dir):
      raise
    try:
      for name in os.listdir(model_dir):
        if _TEMPORARY.match(name):
          path = os.path.join(model_dir, name)
          shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
      good = resume_point(model_dir, log, discard_after=started_at)
    except (OSError, tf.errors.OpError) as cleanup_error:
      log(f"could not set the checkpoint index right after the failed save "
          f"({cleanup_error}); the next start of the job does")
      raise e from None
    raise errors.CheckpointSaveFailed(
        f"no space left on the device of {model_dir} while training wrote to it. The "
        f"checkpoint index names {good or 'no checkpoint'}, the newest complete one. "
        f"Free space there (or keep fewer checkpoints: --keep_checkpoint_max) and run "
        f"again: training resumes from it.") from e


def latest_step(model_dir):
  """The step of the newest checkpoint in `model_dir`; -1 if none (or a remote one)."""
  found = _checkpoints(model_dir) if not checkpoint_names.is_url(model_dir) else []
  return found[0][0] if found else -1


def _out_of_space(error):
  return (getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or
          "No space left on device" in str(error) or "Disk quota exceeded" in str(error))


class FitsTheModel(tf.estimator.SessionRunHook):
  """Refuses to restore a checkpoint whose variables are not the model's."""

  def __init__(self, model_dir):
    self._model_dir = model_dir

  def begin(self):
    latest = tf.train.latest_checkpoint(self._model_dir)
    if not latest:
      return
    model = saved_shapes(tf.compat.v1.global_variables())
    reader = tf.train.load_checkpoint(latest)
    shapes = reader.get_variable_to_shape_map()
    saved = {name: shapes[key] for name, key in keys_by_name(reader).items()}
    difference = _first_difference(model, saved)
    if difference:
      raise errors.ConfigError(
          f"the checkpoint {latest} is not of this model: {difference}. Train into a new "
          f"model_dir, move the checkpoints of the other model away, or restore the model "
          f"that wrote them.")


def saved_shapes(variables):
  """{the name each of `variables` is saved under: its shape}. The parts of a partitioned
  variable (`.../part_0`, as canned Estimators make them outside a tf.distribute strategy)
  are saved as one, under the whole variable's name and shape."""
  shapes = {}
  for variable in variables:
    part = getattr(variable, "_save_slice_info", None)
    if part:
      shapes[part.full_name] = list(part.full_shape)
    else:
      shapes[variable.name.split(":")[0]] = variable.shape.as_list()
  return shapes


def keys_by_name(reader):
  """{variable name in the graph: its key in the checkpoint} of a checkpoint reader.

  A name-based checkpoint keys a variable by its name; an object-based one (Keras,
  `model_to_estimator`) by its place in the object graph, which names the variable.
  """
  shapes = reader.get_variable_to_shape_map()
  if _OBJECT_GRAPH not in shapes:
    return {name: name for name in shapes}
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(_OBJECT_GRAPH))
  return {attribute.full_name: attribute.checkpoint_key
          for node in graph.nodes for attribute in node.attributes}


def _first_difference(model, saved):
  for name in sorted(model):
    if name not in saved:
      return f"the model has variable '{name}' {model[name]}, which the checkpoint lacks"
    if list(saved[name]) != model[name]:
      return (f"variable '{name}' is {model[name]} in the model and {list(saved[name])} in "
              f"the checkpoint")
  extra = sorted(set(saved) - set(model))
  if extra:
    return f"the checkpoint has variable '{extra[0]}' {list(saved[extra[0]])}, which the model lacks"
  return None
