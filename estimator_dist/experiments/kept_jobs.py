"""PBT members that keep their jobs between generations.

A member's segment (`pbt`) is a trial, and each used to be a new job: the launcher, the
program's start, the graph built again and the checkpoint restored, every generation.
Where a member's job is one process, the sweep starts it marked to pause
(`training.between_segments`): once its generation is trained and evaluated, the job
waits, keeping its memory, and its trial is told complete. A member that keeps its values
then trains its next generation in the same job, moved to the CPUs of the slot it gets
(`trial_job.TrialJob`); an exploited member's job ends before its checkpoint is replaced.
Whatever cannot go on (a job that ended, a sweep run again) starts a new job from the
member's checkpoint, as before.

Not kept (`for_sweep` says why): a job of several processes; jobs on GPUs (a waiting job
would keep its GPU's memory from the next); a program the launcher instruments (it may
train more than once); a sweep whose study other runners may share (a SLURM array, Spark,
a storage server); trials tracked in MLflow (each trial its own run).
"""

import os
import subprocess

from estimator_dist.contract import member_segments
from estimator_dist.experiments import trial_job
from estimator_dist.instrument import launching
from estimator_dist.strategies import traits as traits_lib

_END_SECS = 30


def for_sweep(program, *, options, slots, tracked):
  """(the kept jobs of this sweep's members, or None, why not: a sentence, or None)."""
  if options.scheduler != "pbt" or not options.pbt_keep_jobs:
    return None, None
  reasons = (
      (not traits_lib.of(options.strategy).one_process,
       f"--strategy={options.strategy} runs a job of several processes"),
      (any(slot.gpus for slot in slots if isinstance(slot, trial_job.LocalSlot)),
       "a waiting job would keep its GPU's memory"),
      (launching.instrumented(program), "the launcher instruments the program"),
      ("SLURM_ARRAY_TASK_ID" in os.environ, "the SLURM array's other tasks share the study"),
      (not all(isinstance(slot, trial_job.LocalSlot) for slot in slots),
       "Spark's tasks share the study"),
      (options.storage is not None, "other runners may share the study of --storage"),
      (tracked, "each trial is its own MLflow run"))
  why = next((reason for holds, reason in reasons if holds), None)
  return (None, f"each member's segment is a new job: {why}") if why else (KeptJobs(), None)


class KeptJobs:
  """The jobs (trial_job.TrialJob) that paused after their segment, by model_dir."""

  def __init__(self):
    self._jobs = {}

  def keep(self, job):
    self._jobs[job.model_dir] = job

  def take(self, model_dir):
    """The paused job of `model_dir`, to go on; None (and the job ended) where there is
    none, or it waits no more (it has exited, or a signal ends it)."""
    job = self._jobs.pop(model_dir, None)
    if job is not None and job.process.poll() is None and job.has_paused():
      return job
    end([job] if job else [])
    return None

  def end(self, model_dir):
    """Ends the paused job of `model_dir`, if any (before its checkpoint is replaced)."""
    end([self._jobs.pop(model_dir)] if model_dir in self._jobs else [])

  def end_all(self):
    jobs, self._jobs = list(self._jobs.values()), {}
    end(jobs)


def end(jobs):
  """Tells each paused job to end, then waits for all (one that does not end within
  _END_SECS is stopped); their files go."""
  for job in jobs:
    if job.process.poll() is None:
      member_segments.end(job.model_dir, segment=job.segment + 1)
  for job in jobs:
    try:
      job.process.wait(timeout=_END_SECS)
    except subprocess.TimeoutExpired:
      job.stop()
    member_segments.clear(job.model_dir)
