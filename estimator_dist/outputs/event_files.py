"""The scalars in a model_dir's event files, read without TensorFlow.

The launcher's progress lines and the sweep runner read a job's evaluations while it
runs, in processes that never import TensorFlow: `tfrecords` reads the records and
TensorBoard's Event proto parses them. The model_dir is on this machine.
"""

import collections
import glob
import os

from tensorboard.compat.proto import event_pb2

from estimator_dist.outputs import tfrecords

_EVENT_FILES = "events.out.tfevents.*"


def eval_metrics(model_dir):
  """{step: {metric: value}} of the evaluations written to model_dir/eval, in step
  order, as Estimator's `read_eval_metrics` gives them."""
  return scalars(os.path.join(model_dir, "eval"))


def scalars(directory):
  """{step: {tag: value}} of the scalars in the event files of `directory`, in step order
  (training's: loss, global_step/sec)."""
  found = collections.defaultdict(dict)
  for path in sorted(glob.glob(os.path.join(directory, _EVENT_FILES))):
    for event in _events(path):
      metrics = {v.tag: v.simple_value for v in event.summary.value
                 if v.HasField("simple_value")}
      if metrics:
        found[event.step].update(metrics)
  return dict(sorted(found.items()))


def _events(path):
  """The Events of one event file; a record still being written ends the file for now."""
  for data in tfrecords.records(path):
    yield event_pb2.Event.FromString(data)
