"""One measured job of `estimator-dist bench`: the user's program, run by the launcher as a
sweep runs a trial, its speed read from its tasks' heartbeats, stopped once measured.

The job is `python -m estimator_dist.launch --strategy=S --num_workers=N
--model_dir=RUN/model -- PROGRAM ...`, started with a temporary directory of its own (where
the launcher makes its mailbox, so the bench finds the heartbeats there) and told it is a
trial (its tasks train in the bench's model_dir, not the program's own). Every training
task beats about once a second with the job's global step, its time and the examples of
one global step (contract/heartbeat.py); the bench samples them. The measured window
opens once every training task has beaten `warmup_steps` past its first beat and lasts
`window_secs`; then the launcher is asked to stop the job (SIGTERM, without a save: the
job's model_dir goes with it, unless it is kept). A window `to_the_end` lasts until the
job's training ends and the job exits by itself.
"""

import dataclasses
import glob
import os
import shutil
import signal
import subprocess
import time
from typing import Optional, Tuple

from estimator_dist.contract import heartbeat
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import task_env
from estimator_dist.jobs import child_job
from estimator_dist.jobs import model_dir_arg
from estimator_dist.strategies import traits
from estimator_dist.supervision import failure_cause
from estimator_dist.supervision import job_dirs

LOG_NAME = "launch.log"
_POLL_SECS = 0.25
_STOP_SECS = 60  # How long a job may take to stop before it is killed.
_BEAT_SECS = 1.0  # How often a task beats (training.hooks.HeartbeatHook).
STOPPED_FOR_ANOTHER = "stopped unmeasured: another copy ended first"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Window:
  """What is measured: after `warmup_steps` global steps, for `window_secs` (`to_the_end`:
  until the training ends and the job exits by itself); a job that has not measured
  after `timeout_secs` is stopped."""
  warmup_steps: int
  window_secs: float
  timeout_secs: float
  to_the_end: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class Measured:
  """A job's measurement: the (step, time) beats of its furthest task in the window, the
  examples of one global step and the bytes of the model's trainable variables (None:
  not known), or why there is none; `cut_short`: why the window is shorter than asked."""
  beats: Tuple[Tuple[int, float], ...] = ()
  examples_per_step: Optional[int] = None
  trainable_bytes: Optional[int] = None
  failure: str = ""
  cut_short: str = ""

  @property
  def seconds(self):
    return self.beats[-1][1] - self.beats[0][1] if self.beats else 0.0

  @property
  def steps_per_sec(self):
    if len(self.beats) < 2 or self.seconds <= 0:
      return None
    return (self.beats[-1][0] - self.beats[0][0]) / self.seconds

  @property
  def rate(self):
    """Examples per second (steps per second when the batch is not known)."""
    steps = self.steps_per_sec
    return steps * (self.examples_per_step or 1) if steps is not None else None

  def window_rates(self, windows=5):
    """The rate of each of up to `windows` equal parts of the window: its spread."""
    parts = min(windows, len(self.beats) - 1)
    if parts < 1:
      return []
    bounds = [self.beats[round(i * (len(self.beats) - 1) / parts)] for i in range(parts + 1)]
    return [(b[0] - a[0]) / (b[1] - a[1]) * (self.examples_per_step or 1)
            for a, b in zip(bounds, bounds[1:]) if b[1] > a[1]]


class Job:
  """A job of the launcher started for the bench in `directory` (its log and model_dir)
  with a temporary directory of its own, pinned to `cpus` (None: this process's).
  `instrument=False`: the program runs as it is (--instrument=off), and beats itself if it
  is to be measured; `keep_model_dir`: its model_dir stays when it is stopped."""

  def __init__(self, *, strategy, num_workers, num_ps, program, directory, cpus=None,
               instrument=True, keep_model_dir=False):
    directory = os.path.abspath(directory)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    # Short, as the paths of sockets in it must be (Open MPI's, Gloo's); named after this
    # process, so that a later launch removes it if this one is killed.
    self._tmp = job_dirs.make("bench")
    model_dir = os.path.join(directory, "model")
    needs_ps = traits.of(strategy).needs_ps
    self.tasks = 1 if traits.of(strategy).one_process else num_workers
    self.log_path = os.path.join(directory, LOG_NAME)
    self.model_dir, self._keep_model_dir = model_dir, keep_model_dir
    self._asked, self.code = False, None
    with open(self.log_path, "wb") as log:
      self.process = child_job.start(
          strategy=strategy, num_workers=num_workers, model_dir=model_dir,
          program=model_dir_arg.with_flag(program, "model_dir", model_dir), log=log,
          env={**os.environ, "TMPDIR": self._tmp, **task_env.task_environment(trial=True)},
          flags=[*([f"--num_ps={num_ps}"] if needs_ps else []), "--curves=false",
                 *([] if instrument else ["--instrument=off"]),
                 "--preemption_grace_secs=0",
                 "--terminal=all"],  # Every line of its tasks in its log.
          cpus=cpus, new_session=True)

  def progress(self):
    """{task: Progress} of the job's training tasks, from their heartbeats."""
    found = glob.glob(os.path.join(self._tmp, "estimator_dist_*_mailbox_*"))
    return heartbeat.progress_of(mailbox_lib.Mailbox(found[0])) if found else {}

  def ended_by_itself(self):
    """Whether the job ended before the bench asked it to stop (its code in `code`)."""
    if not self._asked and self.code is None:
      self.code = self.process.poll()
    return self.code is not None

  def why_not_measured(self, tasks, window):
    """Why the job gave no window: `tasks` its last progress."""
    if tasks and (self.code == 0 or any(p.ended for p in tasks.values())):
      step = max(p.step for p in tasks.values())
      return (f"its training ended at step {step}, too soon after {window.warmup_steps} "
              f"steps of warm-up to be measured: give the program more steps (see "
              f"{self.log_path})")
    if self.code is None:
      return f"{STOPPED_FOR_ANOTHER} (see {self.log_path})"
    with open(self.log_path, errors="replace") as log:
      said = failure_cause.first_error_line(log.read())
    return (f"exit code {self.code}" + (f": {said}" if said else
                                        ", and no task trained through the toolkit" * (
                                            not tasks)) + f" (see {self.log_path})")

  def ask_to_stop(self):
    """Asks the launcher to stop the job (its tasks end), once."""
    self.ended_by_itself()
    if self.process.poll() is None and not self._asked:
      self.process.send_signal(signal.SIGTERM)
    self._asked = True

  def stop(self):
    """Ends the job (the launcher stops its tasks; killed with its session if it does not
    in time) and removes its model_dir, unless it is kept."""
    self.ask_to_stop()
    try:
      self.process.wait(timeout=_STOP_SECS)
    except subprocess.TimeoutExpired:
      os.killpg(self.process.pid, signal.SIGKILL)
      self.process.wait()
    if not self._keep_model_dir:
      shutil.rmtree(self.model_dir, ignore_errors=True)
    shutil.rmtree(self._tmp, ignore_errors=True)


def measure(jobs, window: Window):
  """Samples `jobs`, started together (one, or independent copies side by side), until
  their common window is measured: it opens once every training task of every job is
  `window.warmup_steps` past its first beat, and lasts `window.window_secs`. A Measured
  per job; every job is stopped."""
  beats, last, opened, first = [[] for _ in jobs], [{} for _ in jobs], None, {}
  started = time.monotonic()
  try:
    while time.monotonic() - started < window.timeout_secs:
      last = [job.progress() or seen for job, seen in zip(jobs, last)]
      for i, tasks in enumerate(last):
        for name, p in tasks.items():
          first.setdefault((i, name), p.step)
      furthest = [max(tasks.values(), key=lambda p: (p.step, p.time)) if tasks else None
                  for tasks in last]
      if opened is None and all(
          len(tasks) >= job.tasks and all(p.step - first[i, name] >= window.warmup_steps
                                          and not p.ended for name, p in tasks.items())
          for i, (job, tasks) in enumerate(zip(jobs, last))):
        opened = max(p.time for p in furthest)
      if opened is not None:
        for kept, progress in zip(beats, furthest):
          if not kept or progress.time > kept[-1][1]:
            kept.append((progress.step, progress.time))
        if not window.to_the_end and (any(p.ended for p in furthest) or min(
            p.time for p in furthest) - opened >= window.window_secs):
          break
      if any(job.ended_by_itself() for job in jobs) or (opened is None and any(
          p.ended for tasks in last for p in tasks.values())):
        break  # A job ended, or a task's training did before the window could open.
      time.sleep(_POLL_SECS)
    else:
      return [Measured(failure=f"not measured within {window.timeout_secs:.0f} s "
                               f"(--timeout_secs): see {job.log_path}") for job in jobs]
  finally:
    for job in jobs:
      job.ask_to_stop()
    for job in jobs:
      job.stop()
  return [_measured(job, kept, tasks, window) for job, kept, tasks in zip(jobs, beats, last)]


def _measured(job, kept, tasks, window):
  if len(kept) < 2 or kept[-1][0] <= kept[0][0] or (job.code not in (None, 0)):
    return Measured(failure=job.why_not_measured(tasks, window))
  found = Measured(
      beats=tuple(kept),
      examples_per_step=max(p.examples_per_step or 0 for p in tasks.values()) or None,
      trainable_bytes=max(p.trainable_bytes or 0 for p in tasks.values()) or None)
  if not window.to_the_end and found.seconds < window.window_secs - _BEAT_SECS:
    why = "its training ended" if job.code is not None or any(
        p.ended for p in tasks.values()) else "another copy's training ended"
    return dataclasses.replace(found, cut_short=f"{found.seconds:.0f} s of "
                               f"{window.window_secs:.0f}: {why}")
  return found
