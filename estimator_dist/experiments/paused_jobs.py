"""PBT members that keep their jobs between generations.

A member's segment (`pbt`) is a trial, and each used to be a new job: TensorFlow started
again, the graph built again, the checkpoint restored, every generation. Where a member's
job is one process on this machine, the sweep starts it marked to pause
(`training.next_round`): once its generation is trained and evaluated, the job waits,
holding its memory and no CPU, and its trial is told complete. A member that keeps its
values then trains its next generation in the same job, moved to the CPUs of the slot it
gets (`trial_job.TrialJob`); an exploited member's job ends before its checkpoint is
replaced. Whatever cannot go on (a job that ended, a sweep run again) starts a new job
from the member's checkpoint, as before.

Not kept: a job of several processes, jobs of a SLURM array's or Spark's runners (which
share the study, not this process), and trials tracked in MLflow (each trial its run).
"""

import os
import subprocess

from estimator_dist.contract import member_rounds
from estimator_dist.experiments import trial_job
from estimator_dist.strategies import traits as traits_lib

_END_SECS = 30


def for_sweep(options, slots, tracked):
  """The paused jobs of this sweep's members, or None where its jobs do not pause."""
  if (options.scheduler != "pbt" or not options.pbt_keep_jobs or tracked or
      not traits_lib.of(options.strategy).one_process or "SLURM_ARRAY_TASK_ID" in os.environ
      or not all(isinstance(slot, trial_job.LocalSlot) for slot in slots)):
    return None
  return PausedJobs()


class PausedJobs:
  """The jobs (trial_job.TrialJob) paused after their round, by model_dir."""

  def __init__(self):
    self._jobs = {}

  def keep(self, job):
    self._jobs[job.model_dir] = job

  def take(self, model_dir, slot):
    """The paused job of `model_dir`, to go on in `slot`; None (and the job ended) where
    there is none, it has exited, or it sees other GPUs than `slot`'s."""
    job = self._jobs.pop(model_dir, None)
    if job is not None and job.process.poll() is None and job.gpus == slot.gpus:
      return job
    _end([job] if job else [])
    return None

  def end(self, model_dir):
    """Ends the paused job of `model_dir`, if any (before its checkpoint is replaced)."""
    _end([self._jobs.pop(model_dir)] if model_dir in self._jobs else [])

  def end_all(self):
    jobs, self._jobs = list(self._jobs.values()), {}
    _end(jobs)


def _end(jobs):
  """Tells each job to end, then waits for all (a job that does not end is stopped)."""
  for job in jobs:
    if job.process.poll() is None:
      member_rounds.end(job.model_dir, round_index=job.round_index + 1)
  for job in jobs:
    try:
      job.process.wait(timeout=_END_SECS)
    except subprocess.TimeoutExpired:
      job.stop()
    member_rounds.clear(job.model_dir)
