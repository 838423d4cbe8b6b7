"""A PBT member's job that trains its next generation in the same process.

A sweep marks the job of a member with `env_vars.PAUSE_BETWEEN_ROUNDS`. Once a round is
trained and evaluated, the chief of a one-task job pauses (`contract.member_rounds`): it
holds its memory and no CPU, beats its heartbeat so the launcher knows it is alive, and
waits for the sweep's word: train to the next generation's last step (on the CPUs of the
slot it runs in now), or end. A job of several tasks, or one asked to stop by a signal,
ends as any job does; the sweep then starts the member's next round as a new job.
"""

import os
import time

from absl import logging

from estimator_dist import command_line
from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import member_rounds
from estimator_dist.task import placement
from estimator_dist.task import preemption

_POLL_SECS = 0.05
_BEAT_SECS = 1.0


def pauses(task):
  """Whether this task waits for a next round once trained: asked to, and alone."""
  return bool(os.environ.get(env_vars.PAUSE_BETWEEN_ROUNDS)) and (
      task.is_chief and sum(len(a) for a in task.cluster.values()) <= 1)


def wait(options, metrics, *, task, after):
  """Pauses after round `after`, which trained to `options.train_steps` (a TrainOptions)
  and evaluated `metrics`; the next round's word (a dict of `member_rounds.go_on`, its
  CPUs taken), or None: the job ends."""
  model_dir, step = options.model_dir, int((metrics or {}).get("global_step",
                                                                options.train_steps))
  member_rounds.pause(model_dir, round_index=after, step=step)
  logging.info(command_line.line("round %d ended at global step %d; waiting for the "
                                 "sweep's next round"), after, step)
  beats, last_beat = heartbeat.path_of(task, os.environ), 0.0
  while not preemption.requested():
    said = member_rounds.next_round(model_dir, after + 1)
    if said is not None:
      if said.get("end"):
        return None
      _take_cpus(said["cpus"])
      return said
    if beats and time.monotonic() - last_beat >= _BEAT_SECS:
      heartbeat.waiting(beats)
      last_beat = time.monotonic()
    time.sleep(_POLL_SECS)
  return None


def _take_cpus(cpus):
  """Moves this process to `cpus`: the slot the sweep runs its next round in."""
  cpus = set(cpus)
  if cpus and cpus != os.sched_getaffinity(0):
    placement.pin_threads(cpus)
    logging.info(command_line.line("the next round trains on CPUs %s"), sorted(cpus))
