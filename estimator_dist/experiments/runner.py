"""`sweep`: many trials of one program, each a distributed job, one Optuna study.

  ed.sweep(["python", "-m", "model_zoo.mnist_dnn", "--train_steps=600"],
           options=ed.SweepOptions(space="learning_rate=loguniform(1e-3,1e-1)", trials=8,
                                   parallel=2, sweep_dir="/tmp/sweep"))

A runner takes trials from the study until it has `trial_count` finished ones (complete,
pruned, or diverged), or, for a grid or --zip, until none of its points is queued or
running (it runs only queued points, never the sampler's values): it asks the study for a
trial (a trial queued again after its runner died comes first, with its values and its
model_dir), starts its job on a free share of the CPUs, reports its evaluations while it
runs, and tells the study how it ended. Several runners (SLURM array tasks, Spark tasks,
or the same command run again after a kill) share one study; the storage's heartbeats
find the trials whose runner died. A trial that fails stops the sweep; a grid's point
whose trials failed is queued again when the sweep is run again (`fixed_points`).
"""

import functools
import os
import subprocess
import sys
import time

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.experiments import pbt
from estimator_dist.experiments import pruners
from estimator_dist.experiments import results
from estimator_dist.experiments import slot_shares
from estimator_dist.experiments import space as space_lib
from estimator_dist.experiments import storage as storage_lib
from estimator_dist.experiments import study as study_lib
from estimator_dist.experiments import sweep_progress
from estimator_dist.experiments import sweep_tracking
from estimator_dist.experiments import trial_job
from estimator_dist.jobs import model_dir_arg
from estimator_dist.jobs import spec
from estimator_dist.supervision import process_tree
from estimator_dist.task import preemption

_POLL_SECS = 0.5


def check_program(program, options):
  """ConfigError for a program the sweep cannot run as trials of `options`."""
  spec.JobSpec(strategy=options.strategy, num_workers=options.workers_per_trial,
               command=tuple(program))
  if model_dir_arg.program_model_dir(list(program[1:])) is not None:
    raise errors.ConfigError("the sweep gives each trial its own model_dir under --sweep_dir; "
                             "remove --model_dir from the program's arguments.")
  pruners.check_first_rung(options.pruner, min_resource_steps=options.min_resource_steps,
                           reduction_factor=options.reduction_factor,
                           last_step=_last_step(program, options))


def _last_step(program, options):
  """The step every trial trains to: the program's --train_steps; None when the program
  gives none (its default is not known here) or the space searches it."""
  if "train_steps" in options.search_space:
    return None
  try:
    return int(model_dir_arg.program_flag(list(program[1:]), "train_steps"))
  except (TypeError, ValueError):
    return None


def prepare(program, *, options):
  """Checks the program and creates the study (once, before any runner starts); (the
  study, the options: for PBT, with every segment of the population as its trials)."""
  check_program(program, options)
  os.makedirs(options.sweep_dir, exist_ok=True)
  study = study_lib.open_study(options, create=True)
  if options.scheduler == "pbt":
    options = pbt.with_generations(study, program, options)
  return study, options


def sweep(program, *, options: study_lib.SweepOptions, out=sys.stdout, on_study=None):
  """Runs the sweep here to `options.trial_count` finished trials, `options.parallel` at
  once on disjoint CPUs (and GPUs by index, where there are GPUs); writes and returns the
  report (see `results.summarize`). A sweep run again resumes its study. `on_study` is
  called with the study once it exists."""
  gpus = slot_shares.gpu_shares(options.parallel, slot_shares.visible_gpus())
  slots = [trial_job.LocalSlot(cpus=cpus, gpus=share, options=options)
           for cpus, share in zip(slot_shares.cpu_shares(options.parallel), gpus)]
  return run(program, options=options, slots=slots, out=out, on_study=on_study)


def run(program, *, options, slots, out=sys.stdout, on_study=None):
  """Creates or resumes the study (then calls `on_study` with it), runs its trials in
  `slots`, and reports."""
  study, options = prepare(program, options=options)
  if on_study:
    on_study(study)
  if options.trial_count < options.trials:
    command_line.write(out, f"the {'zipped lists' if options.zip else 'grid'} has "
                       f"{options.trial_count} points; running {options.trial_count} "
                       f"trials, not {options.trials}.", command="sweep")
  command_line.write(out, f"{options.trial_count} trials of {options.strategy} x "
                     f"{options.workers_per_trial}, {len(slots)} at once, {_search(options)}, "
                     f"{options.direction} eval {options.metric}; study {options.storage_url}",
                     command="sweep")
  tracked = sweep_tracking.SweepRun.start(
      study, options, warn=lambda message: command_line.write(out, message, command="sweep"))
  report = None
  # One storage for the heartbeats of every trial this runner runs.
  run_here = functools.partial(run_trials, heartbeats=storage_lib.heartbeats(
      options.storage_url))
  try:
    # It waits for its trials; a signal is said in its own lines.
    with preemption.watched(ends_after_grace=False, command="sweep"):
      if options.scheduler == "pbt":
        try:
          pbt.run(study, program=program, options=options, slots=slots, out=out,
                  tracked=tracked, run_trials=run_here)
        except trial_job.TrialFailed:
          report = results.summarize(study, options=options, out=out)  # What it reached.
          raise
      else:
        run_here(study, program=program, options=options, slots=slots, out=out,
                 tracked=tracked)
    report = results.summarize(study, options=options, out=out)
    check_no_failed_points(report, options=options)
  except BaseException as e:
    if tracked:
      tracked.finished(report, error=e)
    raise
  if tracked:
    tracked.finished(report)
  return report


def _search(options):
  if options.scheduler == "pbt":
    return (f"population-based training of {options.population} members, exploiting every "
            f"{options.pbt_interval_steps} steps")
  return f"{options.sampler} sampler, {options.pruner} pruner"


def check_no_failed_points(report, *, options):
  """TrialFailed naming the points of a grid or --zip that no trial finished: the sweep
  did not run what it was asked to, though the rest has run and is reported."""
  if not report["failed"]:
    return
  again = ("run the sweep again" if options.retry_failed else
           "run the sweep again without --noretry_failed")
  failed = report["failed"]
  points = "; ".join(f"trial {row['number']} {' '.join(space_lib.as_flags(row['params']))}"
                     for row in failed[:3]) + (f"; and {len(failed) - 3} more"
                                               if len(failed) > 3 else "")
  raise trial_job.TrialFailed(
      f"{len(report['failed'])} point(s) failed and were not run again: {points}; the "
      f"report lists them; {again} to retry them.")


def run_trials(study, *, program, options, slots, out, tracked=None, heartbeats=None,
               on_ended=None):
  """Takes and runs trials, one in each slot at a time, until the study has
  `options.trial_count` finished ones (a grid or --zip: until none of its points is
  queued or running); TrialFailed at once when one fails. `tracked`: the sweep's
  SweepRun, which gets a run for each trial. Told to stop (SIGTERM, SIGUSR1: `preemption`),
  it passes the request to every running trial, whose job saves where it is, and ends
  with Preempted once they have: each trial then goes stale and is retried, from its
  checkpoint, by the sweep run again. `heartbeats`: the storage (storage.heartbeats') the
  running trials beat in; None: they do not.
  `on_ended()`, if given, is called once a trial has ended, before a free slot takes the
  next, and every _POLL_SECS while a slot is free and nothing waits (another runner's
  trial may have ended): PBT queues what its results allow."""
  running = {}  # slot index: TrialJob
  waiting_told = preempting = False
  look_again = 0.0
  progress = sweep_progress.SweepProgress(study, options=options, slots=len(slots), out=out)
  try:
    while True:
      for job in running.values():  # Before any is taken for stale (a long `on_ended`).
        job.beat(heartbeats, storage_lib.HEARTBEAT_SECS)
      study_lib.fail_stale(study)
      for index, job in list(running.items()):
        ended = job.process.poll() is not None
        try:
          state = (job.finish(study, preempting=preempting) if ended else
                   job.reporter.poll())
        except Exception:
          del running[index]
          job.fail(study)
          if tracked:
            tracked.trial_ended(job.trial, "failed")
          raise
        if ended:
          del running[index]
          if tracked:
            tracked.trial_ended(job.trial, state)
          command_line.write(out, f"trial {job.trial.number} {state}: "
                             f"{_described(job.trial, study)}",
                             command="sweep")
          if on_ended and not preempting:
            on_ended()
      if preemption.requested() and not preempting:
        preempting = True
        command_line.write(out, f"{preemption.requested()}: each running trial saves at one "
                           f"step and stops; run the sweep again to resume them",
                           command="sweep")
      for job in running.values() if preempting else ():
        job.preempt()  # Each once its launcher catches the signal.
      if preempting and not running:
        raise preemption.Preempted()
      if not running and study_lib.over(study, options):
        return
      progress.tick()
      free = [i for i in range(len(slots)) if i not in running]
      if free and not preempting and study_lib.wants_trial(study, options):
        trial = study_lib.ask(study, options)
        if study_lib.surplus(study, trial, options):
          continue
        slot = slots[free[0]]
        running[free[0]] = job = trial_job.TrialJob(
            trial, options=options, program=program, slot=slot,
            env=tracked.trial_env(trial) if tracked else {})
        job.beat(heartbeats, 0)
        command_line.write(out, f"trial {trial.number} started on {slot}: "
                           f"{' '.join(_flags(trial))} (model_dir {job.model_dir})",
                           command="sweep")
        continue
      if on_ended and free and not preempting and time.monotonic() >= look_again:
        look_again = time.monotonic() + _POLL_SECS
        on_ended()
        continue
      others = [t.number for t in study_lib.active(study) if t.number not in
                {job.trial.number for job in running.values()}]
      if others and not running and not waiting_told:
        waiting_told = True
        command_line.write(out, f"waiting for trial(s) {others}, which another runner "
                           f"started; a trial whose runner died is retried once its "
                           f"heartbeat is {storage_lib.GRACE_SECS} s old (a journal storage "
                           f"has no heartbeats).", command="sweep")
      _sleep(list(running.values()))
  finally:
    for job in running.values():  # Stale, so a sweep run again retries them.
      job.stop()


def _sleep(jobs):
  """Until one of `jobs` ends, or _POLL_SECS: the next trial starts as soon as a slot is
  free. Spark's stages are polled."""
  if all(isinstance(job.process, subprocess.Popen) for job in jobs):
    process_tree.sleep_until_one_ends([job.process.pid for job in jobs], _POLL_SECS)
  else:
    time.sleep(_POLL_SECS)


def _flags(trial):
  return [f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"
          for name, value in sorted(trial.params.items())]


def _described(trial, study):
  frozen = storage_lib.stored(study, trial)
  value = "" if frozen.value is None else f" -> {frozen.value:g}"
  return f"{' '.join(_flags(trial))}{value}"

