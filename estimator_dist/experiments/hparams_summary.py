"""TensorBoard HParams summaries of a sweep: the space at the sweep dir, each finished
trial's values at its model_dir, so that `tensorboard --logdir=SWEEP_DIR` shows every
trial in the HParams dashboard beside its training curves.

Written without TensorFlow (TensorBoard's protos, framed by `outputs.tfrecords`): the
sweep runner imports none. Imported when a report is written, so a sweep's --help needs
no TensorBoard.
"""

import glob
import os
import socket
import time

import optuna
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.hparams import summary_v2 as hp

from estimator_dist.outputs import tfrecords

_SUFFIX = ".hparams"


def write(trials, options):
  """The HParams dashboard: the space at the sweep dir, each trial's values at its
  model_dir, whose eval/ holds the metric."""
  space = options.search_space
  metric = hp.Metric(options.metric, group="eval", display_name=f"eval {options.metric}")
  _write(options.sweep_dir, hp.hparams_config_pb(
      hparams=[hp.HParam(name, _domain(d)) for name, d in sorted(space.items())],
      metrics=[metric]))
  for trial in trials:
    model_dir = trial.user_attrs.get("model_dir")
    if model_dir and os.path.isdir(model_dir) and trial.state.is_finished():
      _write(model_dir, hp.hparams_pb(
          {name: value for name, value in trial.params.items() if name in space},
          trial_id=os.path.relpath(model_dir, options.sweep_dir)))


def _domain(distribution):
  if isinstance(distribution, optuna.distributions.CategoricalDistribution):
    return hp.Discrete(list(distribution.choices))
  if isinstance(distribution, optuna.distributions.IntDistribution):
    return hp.IntInterval(distribution.low, distribution.high)
  return hp.RealInterval(float(distribution.low), float(distribution.high))


def _write(logdir, summary):
  """Writes `summary` as the one HParams event file of `logdir`."""
  for old in glob.glob(os.path.join(logdir, f"events.out.tfevents.*{_SUFFIX}")):
    os.remove(old)  # One summary a run, however often the report is made.
  now = time.time()
  name = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}{_SUFFIX}"
  with open(os.path.join(logdir, name), "wb") as f:
    for event in (event_pb2.Event(wall_time=now, file_version="brain.Event:2"),
                  event_pb2.Event(wall_time=now, summary=summary)):
      f.write(tfrecords.record(event.SerializeToString()))
