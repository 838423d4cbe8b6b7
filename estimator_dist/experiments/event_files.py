"""The evaluations in a model_dir's event files, read without TensorFlow.

The sweep runner reads every trial's evaluations while the trial runs. TensorBoard's
own record reader and Event proto read them in a process that never imports
TensorFlow; a model_dir on a remote file system ("gs://...") is read through
TensorFlow's file system instead.
"""

import collections
import glob
import os

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors as record_errors
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow

_EVENT_FILES = "events.out.tfevents.*"


def eval_metrics(model_dir):
  """{step: {metric: value}} of the evaluations written to model_dir/eval, in step
  order, as Estimator's `read_eval_metrics` gives them."""
  eval_dir = os.path.join(model_dir, "eval")
  if "://" in eval_dir:
    return _read_remote(eval_dir)
  found = collections.defaultdict(dict)
  for path in sorted(glob.glob(os.path.join(eval_dir, _EVENT_FILES))):
    for event in _events(path):
      metrics = {v.tag: v.simple_value for v in event.summary.value
                 if v.HasField("simple_value")}
      if metrics:
        found[event.step].update(metrics)
  return dict(sorted(found.items()))


def _events(path):
  """The Events of one event file; a record still being written ends the file for now."""
  reader = pywrap_tensorflow.PyRecordReader_New(path)
  while True:
    try:
      reader.GetNext()
    except (record_errors.OutOfRangeError, record_errors.DataLossError):
      return
    yield event_pb2.Event.FromString(reader.record())


def _read_remote(eval_dir):
  # pylint: disable=g-import-not-at-top
  import tensorflow as tf
  from tensorflow.python.util import deprecation
  from tensorflow_estimator.python.estimator import early_stopping as tf_early_stopping
  if not tf.io.gfile.isdir(eval_dir):
    return {}
  with deprecation.silence():  # TensorFlow's own reader uses a deprecated iterator.
    return dict(tf_early_stopping.read_eval_metrics(eval_dir))
