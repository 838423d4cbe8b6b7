"""Elastic Horovod for Estimator: workers come and go, training goes on.

Horovod's elastic mode resets the ranks when hosts are added or removed, or when a
collective fails because a rank died; its state objects assume a training loop in the
user's hands, which Estimator's MonitoredTrainingSession is not (Horovod issue #3376).
Here each round builds the adapter, the Estimator and its session for the current
ranks and trains to the requested step:

- every few steps all ranks check, together, whether the hosts changed; if so rank 0
  first writes a checkpoint of the step it is at (nothing is lost), then every rank
  leaves the round;
- when a rank dies, the others' next collective fails and they leave the round; the
  next round resumes from the latest checkpoint (at most one interval is lost);
- the next round re-initialises Horovod with the new ranks, rebuilds everything, and
  restores the latest checkpoint, which rank 0 broadcasts to all.

With `global_batch_size` the global batch stays the same across rounds; the number of
micro-batches per rank follows the number of ranks.
"""

import os

import tensorflow as tf
from absl import logging
from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import command_line


ELASTIC_ENV = "HOROVOD_ELASTIC"  # Set by horovodrun for the ranks of an elastic job.
CHECK_EVERY_UPDATES = 10


def enabled():
  """Whether horovodrun started this rank in elastic mode."""
  return os.environ.get(ELASTIC_ENV) == "1"


def run(adapter, train_with, model_dir):
  """Runs `train_with(adapter, hooks)` in rounds until it returns; returns its result.

  `train_with` builds and trains an Estimator for `adapter` with the extra `hooks`.
  """
  hvd = adapter.hvd
  state = hvd.elastic.ObjectState(bcast_object=hvd.broadcast_object, get_rank=hvd.rank)
  current = {"adapter": adapter, "rounds": 0}

  @hvd.elastic.run
  def rounds(state):
    if current["rounds"]:  # Horovod was re-initialised: the ranks may have changed.
      current["adapter"] = current["adapter"].renewed()
    current["rounds"] += 1
    task = current["adapter"].task
    if task.is_chief:
      logging.warning(command_line.line("elastic round on %d rank(s), from %s"), task.size,
                      tf.train.latest_checkpoint(model_dir) or "the start")
    every_runs = CHECK_EVERY_UPDATES * current["adapter"].runs_per_update
    return train_with(current["adapter"], [HostUpdatesHook(state, model_dir, task.is_chief,
                                                           every_runs=every_runs)])
  return rounds(state)


class HostUpdatesHook(tf.estimator.SessionRunHook):
  """Every few updates, all ranks check for host changes; rank 0 saves before they reset.
  `every_runs`: this rank's session runs between checks, a multiple of its runs per update
  (under gradient accumulation ranks make different numbers of runs per update)."""

  def __init__(self, state, model_dir, is_chief, *, every_runs):
    self._state = state
    self._model_dir = model_dir
    self._is_chief = is_chief
    self._every_runs = every_runs

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()
    self._saver = tf.compat.v1.train.Saver() if self._is_chief else None
    self._runs = 0

  def after_run(self, run_context, run_values):
    from horovod.common import exceptions  # pylint: disable=g-import-not-at-top
    self._runs += 1
    if self._runs % self._every_runs:
      return
    try:
      with context.eager_mode():  # The check broadcasts outside the training graph.
        self._state.check_host_updates()
    except exceptions.HostsUpdatedInterrupt:
      if self._saver:
        session = run_context.session
        step = session.run(self._global_step)
        self._saver.save(session, os.path.join(self._model_dir, "model.ckpt"),
                         global_step=step)
        logging.warning(command_line.line("the hosts changed at step %d; saved it, resetting"),
                        step)
      raise
