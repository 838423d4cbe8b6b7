"""Step timing that every benchmarked program records the same way.

Each training process runs a `TimingHook` and writes `timing-<task>.json` into the
directory the benchmark gives it: the wall-clock time after each of its own steps
(session runs) and the examples one step consumes in this process.
"""

import json
import os
import time

import tensorflow as tf


class TimingHook(tf.estimator.SessionRunHook):
  """Records the wall-clock time at the end of every session run of this process."""

  def __init__(self, path, examples_per_step):
    self._path = path
    self._examples_per_step = examples_per_step
    self._times = []

  def after_run(self, run_context, run_values):
    self._times.append(time.time())

  def end(self, session):
    write(self._path, self._times, self._examples_per_step)


def write(path, times, examples_per_step):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path + ".tmp", "w") as f:
    json.dump({"times": times, "examples_per_step": examples_per_step}, f)
  os.replace(path + ".tmp", path)


def read_dir(directory):
  """The timings of every task that wrote one into `directory`."""
  found = []
  for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
    if name.startswith("timing-") and name.endswith(".json"):
      with open(os.path.join(directory, name)) as f:
        found.append(json.load(f))
  return found


def task_path(directory, task_name):
  return os.path.join(directory, f"timing-{task_name}.json")
