"""One trial as a job: started in a slot, reported while it runs, told how it ended.

Here the slot is a share of the CPUs and the job is `python -m estimator_dist.launch
--strategy=S --num_workers=W --model_dir=SWEEP_DIR/trial_N -- PROGRAM --flag=value ...`,
which dies with the sweep (a parent-death signal, and the launcher ends its tasks when it
dies); on Spark the slot is a barrier stage (`spark_engine`). The job's output goes to
trial_N/launch.log.
"""

import os
import signal
import subprocess
import time

import optuna

from estimator_dist import errors
from estimator_dist.contract import stop_files
from estimator_dist.contract import task_env
from estimator_dist.experiments import reporting
from estimator_dist.experiments import space as space_lib
from estimator_dist.experiments import storage as storage_lib
from estimator_dist.jobs import child_job
from estimator_dist.supervision import failure_cause
from estimator_dist.supervision import process_tree

LOG_NAME = "launch.log"


class TrialFailed(RuntimeError):
  """A trial's job failed for another reason than its values (not divergence)."""


def model_dir_of(sweep_dir, frozen: optuna.trial.FrozenTrial) -> str:
  """The model_dir it was queued with (a PBT member's), else trial_N under the sweep dir;
  a retried trial keeps its first model_dir (and resumes)."""
  if "model_dir" in frozen.user_attrs:
    return frozen.user_attrs["model_dir"]
  original = frozen.system_attrs.get("failed_trial", frozen.number)
  return os.path.join(os.path.abspath(sweep_dir), f"trial_{original}")


class LocalSlot:
  """Runs a trial's job here, as a job of the launcher pinned to `cpus` and shown only
  `gpus` (indices; none: the job sees what the sweep sees)."""

  def __init__(self, *, cpus, gpus=(), options):
    self.cpus, self.gpus, self._options = frozenset(cpus), tuple(gpus), options

  def __str__(self):
    return f"CPUs {sorted(self.cpus)}" + (f", GPUs {','.join(self.gpus)}" if self.gpus else "")

  def start(self, program, *, model_dir, log, env, curves=True):
    """Starts `program` (with the trial's flags) as a job; its Popen. `curves`: the
    launcher draws the job's curves as it ends."""
    if self.gpus:
      env = {**env, "CUDA_VISIBLE_DEVICES": ",".join(self.gpus)}
    return child_job.start(
        strategy=self._options.strategy, num_workers=self._options.workers_per_trial,
        model_dir=model_dir, program=program, log=log, env=env, cpus=self.cpus,
        flags=[] if curves else ["--curves=false"])


class TrialJob:
  """A running trial: its job (started in a slot, with `env` added to this process's), its
  reporter, and its heartbeat."""

  def __init__(self, trial, *, options, program, slot, env=None):
    self.trial, self.started = trial, time.monotonic()
    frozen = storage_lib.stored(trial.study, trial)
    queued = frozen.user_attrs  # What it was queued with: PBT's segment.
    self.model_dir = model_dir_of(options.sweep_dir, frozen)
    os.makedirs(self.model_dir, exist_ok=True)
    trial.set_user_attr("model_dir", self.model_dir)
    self.reporter = reporting.Reporter(trial, model_dir=self.model_dir, metric=options.metric,
                                       after_step=queued.get("start_step"))
    self.log_path = os.path.join(self.model_dir, LOG_NAME)
    with open(self.log_path, "ab") as log:
      # Where this run's lines begin: a retried trial's log holds its earlier runs too.
      self._log_start = log.tell()
      log.write(f"# trial {trial.number}: ".encode())
      self.process = slot.start(
          [*program, *space_lib.as_flags(trial.params), *queued.get("program_flags", ())],
          model_dir=self.model_dir, log=log,
          env={**os.environ, **task_env.task_environment(trial=True),
               **(env or {})},
          # A PBT member's last segment draws its curves (each segment's would draw them).
          curves=queued.get("last_segment", True))
    self._last_beat, self._asked_to_save = 0.0, False

  def beat(self, storage, every_secs):
    """Records the trial's heartbeat in `storage` (storage.heartbeats'; None: keeps
    none), at most every `every_secs`."""
    if storage is not None and time.monotonic() - self._last_beat >= every_secs:
      storage_lib.beat(storage, self.trial)
      self._last_beat = time.monotonic()

  def stop(self):
    """Ends the job (the launcher stops its tasks) without telling the study: the trial
    goes stale and a later run of the sweep retries it."""
    if self.process.poll() is None:
      self.process.terminate()
      try:
        self.process.wait(timeout=10)
      except subprocess.TimeoutExpired:
        self.process.kill()
        self.process.wait()

  def preempt(self):
    """Asks the job to save at one step and stop (the launcher's preemption), once its
    launcher catches the signal: one still starting would die of it."""
    if (not self._asked_to_save and self.process.poll() is None and
        process_tree.catches(self.process.pid, signal.SIGUSR1)):
      self.process.send_signal(signal.SIGUSR1)
      self._asked_to_save = True

  def fail(self, study):
    """Ends the job and records the trial failed (the sweep stops on its error)."""
    self.stop()
    if not storage_lib.stored(study, self.trial).state.is_finished():
      study.tell(self.trial, state=optuna.trial.TrialState.FAIL)

  def finish(self, study, *, preempting=False) -> str:
    """Tells the study how the ended job went; the state's name. TrialFailed when the
    program failed for another reason than its values. `preempting`: the sweep was asked
    to stop, and a job that did not finish is left untold (it goes stale, and is retried)."""
    code = self.process.poll()
    results = self.reporter.poll()
    self.trial.set_user_attr("seconds", round(time.monotonic() - self.started, 1))
    if results:
      self.trial.set_user_attr("steps", int(max(results)))
    stopped = stop_files.stopped_early(self.model_dir)
    if self.reporter.prune_requested and stopped:  # Else it trained to the end anyway.
      study.tell(self.trial, state=optuna.trial.TrialState.PRUNED)
      return "pruned"
    if code == 0:
      study.tell(self.trial, self.reporter.final_value(results))
      return "complete"
    # A program's own 200 or 3 is a failure like any other: not the toolkit's verdict.
    verdict = None if self._programs_own(code) else code
    if verdict == errors.PREEMPTED_EXIT_CODE or (preempting and code != 0):
      return ("preempted (its checkpoint saved)" if verdict == errors.PREEMPTED_EXIT_CODE else
              f"stopped (exit code {code}) as the sweep was preempted")
    if verdict == errors.DIVERGED_EXIT_CODE:  # The values made training diverge: a result.
      self.trial.set_user_attr("diverged", True)
      study.tell(self.trial, state=optuna.trial.TrialState.FAIL)
      return "diverged"
    failure = failure_message(number=self.trial.number, code=code, params=self.trial.params,
                              log_path=self.log_path, log_start=self._log_start)
    self.trial.set_user_attr("failure", failure)  # For the report of its point.
    raise TrialFailed(failure)


  def _programs_own(self, code):
    """Whether the launcher said exit `code` is the program's own, not a verdict of the
    toolkit (it passes a program's code on as it is)."""
    with open(self.log_path, "rb") as f:
      f.seek(self._log_start)
      return f"exit code {code} is the program's own".encode() in f.read()


def failure_message(*, number, code, params, log_path, log_start=0):
  """One line: the trial, its exit code, its values, the line of its log that says why
  (`failure_cause`; not the log's last line, an INFO line) and where its log is."""
  with open(log_path, "rb") as f:
    f.seek(log_start)
    # This run's lines, after its own first line (the command, which names the values).
    run_lines = f.read().decode(errors="replace").split("\n", 1)[1:]
  cause = failure_cause.first_error_line("".join(run_lines)) or "its log has no output"
  values = " ".join(space_lib.as_flags(params))
  return f"trial {number} failed (exit code {code}): {values}: {cause} (log: {log_path})"
