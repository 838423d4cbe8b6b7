"""The files by which a PBT member's job and its sweep agree on the job's next round.

A member that keeps its values goes on in the job it has (`env_vars.PAUSE_BETWEEN_ROUNDS`):
once a round is trained and evaluated, the chief writes PAUSED (the round, counted from 0,
and its last step) in the model_dir and waits; the sweep writes NEXT_ROUND: the round
after it, to train to `train_steps` (on `cpus`, and the last one when `last`), or the end
of the job. No TensorFlow here: the sweep runner and the chief read and write these in a
local model_dir (a sweep pauses only its local trials' jobs).
"""

import json
import os

from estimator_dist.contract import whole_file

PAUSED = "estimator_dist_paused"
NEXT_ROUND = "estimator_dist_next_round"


def _read(path):
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def clear(model_dir):
  """Removes an earlier job's files (before a new job of the model_dir starts)."""
  for name in (PAUSED, NEXT_ROUND):
    try:
      os.remove(os.path.join(model_dir, name))
    except FileNotFoundError:
      pass


def pause(model_dir, *, round_index, step):
  """The chief: round `round_index` ended at `step`; it waits for the next."""
  whole_file.write_json(os.path.join(model_dir, PAUSED), {"round": round_index, "step": step})


def paused_after(model_dir, round_index):
  """The sweep: the step round `round_index` ended at, once the chief paused after it."""
  paused = _read(os.path.join(model_dir, PAUSED))
  return paused["step"] if paused and paused.get("round") == round_index else None


def go_on(model_dir, *, round_index, train_steps, cpus, last):
  """The sweep: the chief trains round `round_index` to `train_steps` on `cpus`, then
  pauses again unless it is the `last`."""
  whole_file.write_json(os.path.join(model_dir, NEXT_ROUND), {
      "round": round_index, "train_steps": train_steps, "cpus": sorted(cpus), "last": last})


def end(model_dir, *, round_index):
  """The sweep: the job ends instead of training round `round_index`."""
  whole_file.write_json(os.path.join(model_dir, NEXT_ROUND), {"round": round_index,
                                                               "end": True})


def ended_between_rounds(model_dir):
  """The launcher: whether the sweep ended the job between two rounds (an exploited
  member's: it draws no curves, which the member's next job draws)."""
  said = _read(os.path.join(model_dir, NEXT_ROUND))
  return bool(said and said.get("end"))


def next_round(model_dir, round_index):
  """The chief: the sweep's word on round `round_index` (a dict of `go_on` or `end`), or
  None while it has said nothing."""
  said = _read(os.path.join(model_dir, NEXT_ROUND))
  return said if said and said.get("round") == round_index else None
