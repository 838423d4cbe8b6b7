"""One measured job of `estimator-dist bench`: the user's program, run by the launcher as a
sweep runs a trial, its speed read from its tasks' heartbeats, stopped once measured.

The job is `python -m estimator_dist.launch --strategy=S --num_workers=N
--model_dir=RUN/model -- PROGRAM ...`, started with a temporary directory of its own (where
the launcher makes its mailbox, so the bench finds the heartbeats there) and told it is a
trial (its tasks train in the bench's model_dir, not the program's own). Every training
task beats about once a second with the job's global step, its time and the examples of
one global step (contract/heartbeat.py); the bench samples them. The measured window
opens once every training task has beaten past the warm-up steps and lasts
`window_secs`; then the launcher is asked to stop the job (SIGTERM: its tasks save and end).
"""

import dataclasses
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Optional, Tuple

from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.jobs import model_dir_arg
from estimator_dist.strategies import traits
from estimator_dist.supervision import job_dirs
from estimator_dist.supervision import process_tree

LOG_NAME = "launch.log"
_POLL_SECS = 0.25
_STOP_SECS = 60  # How long a job may take to stop before it is killed.


@dataclasses.dataclass(frozen=True, kw_only=True)
class Window:
  """What is measured: after `warmup_steps` global steps, for `window_secs`; a job that
  has not measured after `timeout_secs` is stopped."""
  warmup_steps: int
  window_secs: float
  timeout_secs: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class Measured:
  """A job's measurement: the (step, time) beats of its furthest task in the window, the
  examples of one global step and the bytes of the model's trainable variables (None:
  not known), or why there is none."""
  beats: Tuple[Tuple[int, float], ...] = ()
  examples_per_step: Optional[int] = None
  trainable_bytes: Optional[int] = None
  failure: str = ""

  @property
  def steps_per_sec(self):
    if len(self.beats) < 2:
      return None
    (first_step, first), (last_step, last) = self.beats[0], self.beats[-1]
    return (last_step - first_step) / (last - first) if last > first else None

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


def program_args(program, model_dir):
  """`program` with its own --model_dir, if it gives one, replaced by `model_dir`: the
  bench never trains in (or resumes from) the user's."""
  if model_dir_arg.program_model_dir(program[1:]) is None:
    return list(program)
  args, skip = [program[0]], False
  for i, arg in enumerate(program[1:], start=1):
    name, sep, _ = arg.lstrip("-").partition("=")
    if skip:
      skip = False
    elif arg.startswith("-") and name == "model_dir":
      skip = not sep and i + 1 < len(program)
    else:
      args.append(arg)
  return [*args, f"--model_dir={model_dir}"]


class Job:
  """A job of the launcher started for the bench in `directory` (its log and model_dir)
  with a temporary directory of its own, pinned to `cpus` (None: this process's)."""

  def __init__(self, *, strategy, num_workers, num_ps, program, directory, cpus=None):
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    # Short, as the paths of sockets in it must be (Open MPI's, Gloo's); named after this
    # process, so that a later launch removes it if this one is killed.
    self._tmp = job_dirs.make("bench")
    model_dir = os.path.join(directory, "model")
    needs_ps = traits.of(strategy).needs_ps
    command = [sys.executable, "-m", "estimator_dist.launch", f"--strategy={strategy}",
               f"--num_workers={num_workers}", *([f"--num_ps={num_ps}"] if needs_ps else []),
               f"--model_dir={model_dir}", "--curves=false",
               "--terminal=all", "--",  # Every line of its tasks in its log.
               *program_args(program, model_dir)]
    self.tasks = 1 if traits.of(strategy).one_process else num_workers
    self.log_path = os.path.join(directory, LOG_NAME)
    self._directory, self._asked = directory, False
    env = {**os.environ, "TMPDIR": self._tmp, env_vars.TRIAL: "1"}

    def start():
      process_tree.die_with_parent()
      if cpus:
        os.sched_setaffinity(0, cpus)
    with open(self.log_path, "wb") as log:
      log.write(f"{' '.join(command)}\n".encode())
      log.flush()
      self.process = subprocess.Popen(  # pylint: disable=subprocess-popen-preexec-fn
          command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
          preexec_fn=start)

  def progress(self):
    """{task: Progress} of the job's training tasks, from their heartbeats."""
    found = glob.glob(os.path.join(self._tmp, "estimator_dist_*_mailbox_*"))
    return heartbeat.progress_of(mailbox_lib.Mailbox(found[0])) if found else {}

  def why_not_measured(self, tasks, window):
    """Why the job gave no window: `tasks` its last progress."""
    code = self.process.poll()
    if not tasks:
      said = _error_in(self.log_path)
      return (f"exit code {code}" + (f": {said}" if said else
                                     ", and no task trained through the toolkit")
              + f" (see {self.log_path})" if code is not None
              else f"no heartbeat: see {self.log_path}")
    step = max(p.step for p in tasks.values())
    return (f"its training ended at step {step}, too soon after {window.warmup_steps} steps "
            f"of warm-up to be measured: give the program more steps (see {self.log_path})")

  def ask_to_stop(self):
    """Asks the launcher to stop the job (its tasks save and end), once."""
    if self.process.poll() is None and not self._asked:
      self.process.send_signal(signal.SIGTERM)
      self._asked = True

  def stop(self):
    """Ends the job (the launcher stops its tasks) and removes its model_dir."""
    self.ask_to_stop()
    if self.process.poll() is None:
      try:
        self.process.wait(timeout=_STOP_SECS)
      except subprocess.TimeoutExpired:
        self.process.kill()
        self.process.wait()
    shutil.rmtree(os.path.join(self._directory, "model"), ignore_errors=True)
    shutil.rmtree(self._tmp, ignore_errors=True)


def _error_in(log_path):
  """The job's error line in its log: the toolkit's, else the last exception's; None."""
  ours, raised = None, None
  with open(log_path, errors="replace") as log:
    for line in log:
      line = re.sub(r"^\[[a-z]+:\d+\] ", "", line.strip())
      if ": error: " in line and line.startswith("estimator-dist"):
        ours = ours or line
      elif re.match(r"^[\w.]+(Error|Exception): ", line):
        raised = line
  return (ours or raised or "")[:400] or None


def measure(jobs, window: Window):
  """Samples `jobs`, started together (one, or independent copies side by side), until
  their common window is measured: it opens once every training task of every job is past
  the warm-up and lasts `window.window_secs`. A Measured per job; every job is stopped."""
  beats, last, opened = [[] for _ in jobs], [{} for _ in jobs], None
  started = time.monotonic()
  try:
    while time.monotonic() - started < window.timeout_secs:
      last = [job.progress() or seen for job, seen in zip(jobs, last)]
      furthest = [max(tasks.values(), key=lambda p: (p.step, p.time)) if tasks else None
                  for tasks in last]
      if opened is None and all(
          len(tasks) >= job.tasks and all(p.step >= window.warmup_steps and not p.ended
                                          for p in tasks.values())
          for job, tasks in zip(jobs, last)):
        opened = max(p.time for p in furthest)
      if opened is not None:
        for kept, progress in zip(beats, furthest):
          if not kept or progress.time > kept[-1][1]:
            kept.append((progress.step, progress.time))
        if (any(p.ended for p in furthest) or
            min(p.time for p in furthest) - opened >= window.window_secs):
          break
      if any(job.process.poll() is not None for job in jobs):
        break
      time.sleep(_POLL_SECS)
    else:
      return [Measured(failure=f"not measured within {window.timeout_secs:.0f} s "
                               f"(--timeout_secs): see {job.log_path}") for job in jobs]
  finally:
    for job in jobs:
      job.ask_to_stop()
    for job in jobs:
      job.stop()
  return [Measured(beats=tuple(kept),
                   examples_per_step=max(p.examples_per_step or 0 for p in tasks.values()) or None,
                   trainable_bytes=max(p.trainable_bytes or 0 for p in tasks.values()) or None)
          if len(kept) >= 2 and kept[-1][0] > kept[0][0]
          else Measured(failure=job.why_not_measured(tasks, window))
          for job, kept, tasks in zip(jobs, beats, last)]
