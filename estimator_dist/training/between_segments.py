"""A PBT member's job that trains its next segment in the same process.

A sweep marks the job of a member that may keep it with `env_vars.PAUSE_BETWEEN_SEGMENTS`.
Once a segment is trained and evaluated, the chief of a one-task job, training in the
model_dir its launcher holds, pauses (`contract.member_segments`): it keeps its memory,
uses next to no CPU, beats its heartbeat so that the launcher knows it is alive, and waits
for the sweep's word: train to the next generation's last step (on the CPUs of the slot it
now runs in), or end. Only a process's first training pauses: a program that trains again
afterwards trains as it would. A job of several tasks, or a program training in a
model_dir of its own, ends as any job does, and the sweep starts the member's next segment
as a new job. A chief asked to stop by a signal while it waits ends as a preempted job
(its work is saved). A next segment's saver does not save again, as its session starts,
the checkpoint its last segment ended with (`SegmentSaver`).
"""

import os
import time

import tensorflow as tf
from absl import logging

from estimator_dist import command_line
from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import member_segments
from estimator_dist.contract import vouched_checkpoint
from estimator_dist.outputs import model_dir_lock
from estimator_dist.task import placement
from estimator_dist.task import preemption

_POLL_SECS = 0.05
_BEAT_SECS = 1.0
_trained = False  # This process's first training has ended: no other one pauses.
_next_segment = False  # This process trains a next segment of its job.


def pauses(task, options):
  """Whether this task waits for a next segment once trained (`options`: its TrainOptions):
  asked to, alone, in the model_dir its launcher holds, in the process's first training."""
  return (bool(os.environ.get(env_vars.PAUSE_BETWEEN_SEGMENTS)) and not _trained and
          task.is_chief and sum(len(a) for a in task.cluster.values()) <= 1 and
          model_dir_lock.held_by_launcher(options.model_dir))


def trained():
  """The process's first training has ended (after its last segment)."""
  global _trained, _next_segment
  _trained, _next_segment = True, False


def saver_hooks(spec, config):
  """The training hooks a next segment adds to its TRAIN EstimatorSpec `spec` (`config`:
  the Estimator's RunConfig): the saver Estimator would add, as a `SegmentSaver`."""
  if not _next_segment or not (config.save_checkpoints_steps or config.save_checkpoints_secs):
    return []
  if config.train_distribute is not None:  # Its saver's scaffold is one Estimator merges.
    return []
  hooks = (*spec.training_hooks, *spec.training_chief_hooks)
  if any(isinstance(h, tf.compat.v1.train.CheckpointSaverHook) for h in hooks):
    return []  # The model_fn's own.
  return [SegmentSaver(config.model_dir, save_secs=config.save_checkpoints_secs,
                       save_steps=config.save_checkpoints_steps, scaffold=spec.scaffold,
                       save_graph_def=config.checkpoint_save_graph_def)]


class SegmentSaver(tf.compat.v1.train.CheckpointSaverHook):
  """Estimator's saver, less what it does as a next segment's session starts from the
  checkpoint this process saved as its last segment ended: saving it again, and writing
  the same graph again (graph.pbtxt, and the events file: its writer is the same)."""

  def after_create_session(self, session, coord):
    step = session.run(self._global_step_tensor)
    latest = tf.train.latest_checkpoint(self._checkpoint_dir)
    if latest is None or vouched_checkpoint.step_of(latest) != step:
      super().after_create_session(session, coord)
      return
    self._timer.update_last_triggered_step(step)


def step_of(options, metrics):
  """The step a segment trained to `options.train_steps` ended at (its final `metrics`)."""
  return int((metrics or {}).get("global_step", options.train_steps))


def wait(model_dir, *, task, after, step):
  """Pauses after the job's segment `after` (ended at `step`); the next segment's word (a
  dict of `member_segments.go_on`, its CPUs taken), or None: the job ends (asked by the
  sweep, or by a signal: `preemption.requested()`)."""
  global _next_segment
  member_segments.pause(model_dir, segment=after, step=step)
  logging.info(command_line.line("segment %d ended at global step %d; waiting for the "
                                 "sweep's next segment"), after, step)
  beats, last_beat = heartbeat.path_of(task, os.environ), float("-inf")
  while not preemption.requested():
    if beats and time.monotonic() - last_beat >= _BEAT_SECS:
      heartbeat.waiting(beats)
      last_beat = time.monotonic()
    said = member_segments.next_segment(model_dir, segment=after + 1)
    if said is not None:
      if said.get("end"):
        return None
      _take_cpus(said["cpus"])
      _next_segment = True  # What follows trains from where the last segment ended.
      return said
    time.sleep(_POLL_SECS)
  member_segments.stopped_waiting(model_dir)
  return None


def _take_cpus(cpus):
  """Moves this process to `cpus`: the slot the sweep runs its next segment in."""
  cpus = set(cpus)
  if cpus and cpus != os.sched_getaffinity(0):
    placement.pin_threads(cpus)
    logging.info(command_line.line("the next segment trains on CPUs %s"), sorted(cpus))
