"""The files by which a PBT member's job and its sweep agree on the job's next segment.

A member that keeps its values goes on in the job it has (`env_vars.PAUSE_BETWEEN_SEGMENTS`):
once a segment is trained and evaluated, the chief writes PAUSED (the segment, counted
from 0 in the job, and its last step) in the model_dir and waits; the sweep writes
NEXT_SEGMENT: the segment after it, to train to `train_steps` (on `cpus`; the job's last
when `last`), or the end of the job. No TensorFlow here: the sweep runner, the launcher and
the chief read and write these in a local model_dir (a sweep keeps only its local trials'
jobs).
"""

import json
import os

from estimator_dist.contract import whole_file

PAUSED = "estimator_dist_paused"
NEXT_SEGMENT = "estimator_dist_next_segment"


def _read(path):
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def clear(model_dir):
  """Removes an earlier job's files (before a new job of the model_dir starts)."""
  for name in (PAUSED, NEXT_SEGMENT):
    _remove(os.path.join(model_dir, name))


def _remove(path):
  try:
    os.remove(path)
  except FileNotFoundError:
    pass


def pause(model_dir, *, segment, step):
  """The chief: its job's segment `segment` ended at `step`; it waits for the next."""
  whole_file.write_json(os.path.join(model_dir, PAUSED), {"segment": segment, "step": step})


def stopped_waiting(model_dir):
  """The chief: it waits no more (a signal ends its job): its member's next segment is a
  new job."""
  _remove(os.path.join(model_dir, PAUSED))


def paused_after(model_dir, *, segment):
  """The sweep: the step the job's segment `segment` ended at, once the chief paused
  after it; else None."""
  paused = _read(os.path.join(model_dir, PAUSED))
  return paused["step"] if paused and paused.get("segment") == segment else None


def go_on(model_dir, *, segment, train_steps, cpus, last):
  """The sweep: the chief trains its job's segment `segment` to `train_steps` on `cpus`,
  then pauses again unless it is the `last`."""
  whole_file.write_json(os.path.join(model_dir, NEXT_SEGMENT), {
      "segment": segment, "train_steps": train_steps, "cpus": sorted(cpus), "last": last})


def end(model_dir, *, segment):
  """The sweep: the job ends instead of training its segment `segment`."""
  whole_file.write_json(os.path.join(model_dir, NEXT_SEGMENT), {"segment": segment,
                                                                 "end": True})


def ended_between_segments(model_dir):
  """The launcher: whether the sweep ended the job between two segments (an exploited
  member's job: it draws no curves, which the member's next job draws)."""
  said = _read(os.path.join(model_dir, NEXT_SEGMENT))
  return bool(said and said.get("end"))


def next_segment(model_dir, *, segment):
  """The chief: the sweep's word on its job's segment `segment` (a dict of `go_on` or
  `end`), or None while the sweep has said nothing."""
  said = _read(os.path.join(model_dir, NEXT_SEGMENT))
  return said if said and said.get("segment") == segment else None
