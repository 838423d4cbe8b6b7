"""`estimator-dist progress`: how far a job is, from its heartbeats, where no launcher runs.

  estimator-dist progress --mailbox=DIR --model_dir=DIR --progress_secs=30

The sbatch script of `estimator-dist slurm` runs it in the background of its batch step,
and `engines.spark` in a thread of its driver: the tasks beat in the job's mailbox, in the
(shared) model_dir, and this prints the launcher's progress lines (`live_progress`) into the job's
output until the job's tasks have ended or it is stopped, each its own:
`estimator-dist progress: step 1200/2000 (60 %), ...`.

With --hang_timeout_secs it also ends a job whose training hangs, as the local launcher's
hang checks do: a task whose heartbeat stops that long, or that has been idle that long
after its training ended, is said in one line, the verdict (exit code 124) goes into the
mailbox, and --on_hang (the sbatch script's cancel of its step) runs. A task that has not
beaten yet is its watchdog's, whose startup timeout ends it.
"""

import os
import signal
import subprocess
import sys
import threading

from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.watching import live_progress


_HANG = "hang"  # The watcher's verdict in the mailbox.
# A cancel that fails (slurmctld busy) is tried again this often, this many times.
_RETRY_SECS, _TRIES = 5.0, 6


def hang_of(mailbox):
  """Why the watcher stopped the job for a hang (its verdict in `mailbox`), or None."""
  return mailbox.value(mailbox_lib.VERDICTS, _HANG, str, key="why")


def watch(*, mailbox, model_dir, every_secs, out=sys.stdout, stop=None, hang_timeout_secs=0,
          on_hang=None):
  """Prints progress lines from the beats in `mailbox` (a Mailbox) until `stop` (a
  threading.Event) is set or this is stopped, or (without hang checks) every task that
  beat has ended its training; the last one says where they got to. A task whose beats
  stop for `hang_timeout_secs` (0: never), during its training or after it, is said, the
  verdict posted, `on_hang()` called (again, up to _TRIES times, while it returns False),
  and the watch ends."""
  stop = stop or threading.Event()
  log = lambda message: command_line.write(out, message, command="progress")
  lines = live_progress.ProgressLines(
      mailbox=mailbox, model_dir=model_dir, every_secs=every_secs, label="", log=log)
  try:
    while True:
      lines.tick()
      tasks = heartbeat.progress_of(mailbox)
      if not hang_timeout_secs and tasks and all(p.ended for p in tasks.values()):
        return  # With hang checks, the next train() of the program may follow.
      why = hang_timeout_secs and _hang(mailbox, hang_timeout_secs)
      if why:
        log(f"{why}; stopping the job")
        mailbox_lib.post_verdict(errors.STALLED_EXIT_CODE, why, mailbox=mailbox, name=_HANG)
        for _ in range(_TRIES if on_hang else 0):  # A cancel that failed is tried again.
          if on_hang() is not False or stop.wait(_RETRY_SECS):
            break
        return
      if stop.wait(0.5):
        return
  finally:  # Also when the batch step stops it: where the tasks got to.
    lines.tick(final=True)


def _hang(mailbox, timeout_secs):
  """Why the job hangs, from its beats; None while it does not."""
  stuck = heartbeat.stalled(mailbox, timeout_secs)
  if stuck:
    return (f"no training progress on {', '.join(stuck)} for {timeout_secs:g}s (heartbeat; "
            f"last beat: {heartbeat.last_steps(mailbox, stuck)})")
  idle = heartbeat.idle_after_training(mailbox, timeout_secs)
  return idle and heartbeat.idle_line(idle, timeout_secs)


def define_flags(flag_values=flags.FLAGS):
  """Defines the flags of `estimator-dist progress` on `flag_values`; their FlagHolders
  (mailbox, model_dir, every)."""
  f = flag_values
  return (flags.DEFINE_string("mailbox", None, "The job's mailbox, where its tasks beat "
                              "(their ESTIMATOR_DIST_MAILBOX); required.", required=True,
                              flag_values=f),
          flags.DEFINE_string("model_dir", None, "The job's model_dir (its evaluations).",
                              flag_values=f),
          flags.DEFINE_float("progress_secs", 30, "A line this often; 0: none.",
                             lower_bound=0, flag_values=f),
          flags.DEFINE_float("hang_timeout_secs", 0, "End the job when a task's heartbeat "
                             "stops this long; 0: never.", lower_bound=0, flag_values=f),
          flags.DEFINE_string("on_hang", None, "The shell command that ends the job's "
                              "tasks when one hangs (the sbatch script's: scancel of its step).",
                              flag_values=f))


def run():
  mailbox, model_dir, every, hang_timeout, on_hang = define_flags()

  def main(_):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # The batch step ends it.
    if not os.path.isdir(mailbox.value):
      command_line.write_error(f"--mailbox={mailbox.value} is not a directory: give the "
                               f"job's mailbox (its tasks' ${env_vars.MAILBOX})", "progress")
      return errors.USAGE_EXIT_CODE
    watch(mailbox=mailbox_lib.Mailbox(mailbox.value), model_dir=model_dir.value,
          every_secs=every.value, hang_timeout_secs=hang_timeout.value,
          on_hang=on_hang.value and (
              lambda: subprocess.run(on_hang.value, shell=True, check=False).returncode == 0))
    return 0
  command_line.run(main, command="progress")
