"""A checkpoint known complete, remembered, so a job resuming from it reads it only once.

Before a job resumes, its checkpoints are read in full (`outputs.checkpoints`), and that
takes TensorFlow, which the launcher otherwise never imports: some 2.5 s of every resumed
job (each PBT segment after the first, every retried or continued job). A checkpoint is
known complete when a save wrote it (the chief's saver returned) or when it was read in
full; that is remembered here, with the size, modification time and inode of each of its
files and the checkpoint index as they were. While all of them are unchanged and no newer
checkpoint has appeared, the same reading would find the same: `holds` says so without
TensorFlow. A file written since (a truncated or rewritten checkpoint, a new save, a
changed index) makes it not hold, and the checkpoints are read again.

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


def _state(model_dir, step):
  """{"index": the index text, "files": {name: [size, mtime_ns, inode]}} of checkpoint `step`,
  or None where it lacks its index, data or graph, or the index names another."""
  prefix = f"model.ckpt-{step}."
  files = {}
  for name in os.listdir(model_dir):
    if name.startswith(prefix):
      stat = os.stat(os.path.join(model_dir, name))
      files[name] = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
  kinds = {name[len(prefix):].split("-", 1)[0] for name in files}
  if not {"index", "meta", "data"} <= kinds:
    return None
  with open(os.path.join(model_dir, _INDEX)) as f:
    index = f.read()
  latest = _LATEST.search(index)
  if not latest or os.path.basename(latest.group(1)) != f"model.ckpt-{step}":
    return None
  return {"index": index, "files": files}


def remember(model_dir, step):
  """Remembers checkpoint `step` of the local `model_dir` as complete (it was just written
  by a save that returned, or read in full); nothing when its files are not all there."""
  try:
    state = _state(model_dir, step)
    if state:
      os.makedirs(os.path.join(model_dir, os.path.dirname(FILE_NAME)), exist_ok=True)
      whole_file.write_json(os.path.join(model_dir, FILE_NAME), {"step": int(step), **state})
  except OSError:
    pass  # Then it is read in full at the next start, as it would be without this.


def forget(model_dir):
  """Forgets what was remembered of the local `model_dir` (its checkpoints are replaced)."""
  try:
    os.remove(os.path.join(model_dir, FILE_NAME))
  except FileNotFoundError:
    pass


def holds(model_dir):
  """The prefix of the checkpoint remembered complete in the local `model_dir` while it and
  the index are as they were and no newer checkpoint is there; else None."""
  try:
    with open(os.path.join(model_dir, FILE_NAME)) as f:
      recorded = json.load(f)
    step = recorded["step"]
    if any(int(m.group(1)) > step for m in map(_CHECKPOINT.match, os.listdir(model_dir)) if m):
      return None
    state = _state(model_dir, step)
  except (OSError, ValueError, KeyError, TypeError):
    return None
  if state is None or state != {"index": recorded["index"], "files": recorded["files"]}:
    return None
  return os.path.join(model_dir, f"model.ckpt-{step}")
