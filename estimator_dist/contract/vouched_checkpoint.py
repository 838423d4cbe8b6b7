"""A checkpoint known complete, remembered, so a job resuming from it reads it only once.

Before a job resumes, its checkpoints are read in full (`outputs.checkpoints`), and that
takes TensorFlow, which the launcher otherwise never imports: some 2.5 s of every resumed
job (each PBT segment after the first, every retried or continued job). A checkpoint is
known complete when a save wrote it (the chief's saver returned) or when it was read in
full; that is remembered here, with the checkpoint index and each of its files' identity
(device, inode, size, modification and change times) as they were. While all of them are
unchanged, no newer checkpoint has appeared and the machine has not started again, the
same reading would find the same: `holds` says so without TensorFlow. Anything else (a
truncated, rewritten or replaced file, a new save, a changed index, a model_dir moved
away from the path its index names, a restart after which a file can keep its size and
times but not its bytes) makes it not hold, and the checkpoints are read again.

Local model_dirs only, with the standard library: the launcher and the sweep runner use
it without TensorFlow.
"""

import json
import os
import re

from estimator_dist.contract import whole_file

FILE_NAME = os.path.join("estimator_dist", "vouched_checkpoint.json")
_INDEX = "checkpoint"
_CHECKPOINT = re.compile(r"^model\.ckpt-(\d+)\.index$")
_LATEST = re.compile(r'^model_checkpoint_path:\s*"([^"]+)"', re.MULTILINE)
_SHARD = re.compile(r"^data-(\d+)-of-(\d+)$")
# Changes at every start of the machine: a crash can leave a file that kept its size and
# times but not its bytes (nothing syncs checkpoints to disk), so a record of an earlier
# boot is not trusted.
_BOOT_ID = "/proc/sys/kernel/random/boot_id"


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


def _boot():
  try:
    with open(_BOOT_ID) as f:
      return f.read().strip()
  except OSError:
    return None


def _state(model_dir, step):
  """What checkpoint `step` of `model_dir` is now: the index's text and each of its files'
  identity (device, inode, size, modification and change times), with the machine's boot;
  None where it lacks its index, graph or a data shard, or the index names another."""
  prefix = f"model.ckpt-{step}."
  files, shards = {}, set()
  for name in os.listdir(model_dir):
    if name.startswith(prefix):
      stat = os.stat(os.path.join(model_dir, name))
      files[name] = [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]
      shards.update(_SHARD.findall(name[len(prefix):]))
  counts = {int(count) for _, count in shards}
  complete_data = len(counts) == 1 and {int(i) for i, _ in shards} == set(range(counts.pop()))
  if not (complete_data and {prefix + "index", prefix + "meta"} <= set(files)):
    return None
  with open(os.path.join(model_dir, _INDEX)) as f:
    index = f.read()
  latest = _LATEST.search(index)
  if not latest:
    return None
  # A relative path is relative to the model_dir, as TensorFlow reads it; a path elsewhere
  # (a model_dir moved or linked) is not this checkpoint.
  named = os.path.join(model_dir, latest.group(1))
  if os.path.normpath(named) != os.path.normpath(os.path.join(model_dir, prefix[:-1])):
    return None
  return {"index": index, "files": files, "boot": _boot()}


def remember(model_dir, *, step):
  """Remembers checkpoint `step` of the local `model_dir` as complete (it was just written
  by a save that returned, or read in full); nothing when its files are not all there, or
  for a model_dir on a remote file system."""
  if "://" in model_dir:
    return
  try:
    state = _state(model_dir, step)
    if state:
      os.makedirs(os.path.join(model_dir, os.path.dirname(FILE_NAME)), exist_ok=True)
      whole_file.write_json(os.path.join(model_dir, FILE_NAME), {"step": int(step), **state})
  except (OSError, ValueError):
    pass  # Then it is read in full at the next start, as it would be without this.


def forget(model_dir):
  """Forgets what was remembered of the local `model_dir` (its checkpoints are replaced)."""
  try:
    os.remove(os.path.join(model_dir, FILE_NAME))
  except FileNotFoundError:
    pass


def holds(model_dir):
  """The prefix of the checkpoint remembered complete in the local `model_dir` while it and
  the index are as they were, no newer checkpoint is there and the machine has not started
  again since; else None (always, for a remote model_dir)."""
  if "://" in model_dir:
    return None
  try:
    with open(os.path.join(model_dir, FILE_NAME)) as f:
      recorded = json.load(f)
    step = int(recorded.pop("step"))
    if any(newer is not None and newer > step
           for newer in map(step_of_index, os.listdir(model_dir))):
      return None
    state = _state(model_dir, step)
  except (OSError, ValueError, KeyError, TypeError, AttributeError):
    return None
  if state is None or state["boot"] is None or state != recorded:
    return None
  return os.path.join(model_dir, f"model.ckpt-{step}")
