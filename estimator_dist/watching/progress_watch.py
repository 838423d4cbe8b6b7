"""`estimator-dist progress`: how far a job is, from its heartbeats, where no launcher runs.

  estimator-dist progress --mailbox=DIR --model_dir=DIR --progress_secs=30

The sbatch script of `estimator-dist slurm` runs it in the background of its batch step,
and `engines.spark` in a thread of its driver: the tasks beat in the job's mailbox, in the
(shared) model_dir, and this prints the launcher's progress lines (`live_progress`) into the job's
output until the job's tasks have ended or it is stopped, each its own:
`estimator-dist progress: step 1200/2000 (60 %), ...`.
"""

import os
import signal
import sys
import threading

from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.watching import live_progress


def watch(*, mailbox, model_dir, every_secs, out=sys.stdout, stop=None):
  """Prints progress lines from the beats in `mailbox` (a Mailbox) until every task that
  beat has ended its training, or `stop` (a threading.Event) is set or this is stopped;
  the last one says where they got to."""
  stop = stop or threading.Event()
  lines = live_progress.ProgressLines(
      mailbox=mailbox, model_dir=model_dir, every_secs=every_secs, label="",
      log=lambda message: command_line.write(out, message, command="progress"))
  try:
    while True:
      lines.tick()
      tasks = heartbeat.progress_of(mailbox)
      if tasks and all(p.ended for p in tasks.values()):
        return
      if stop.wait(0.5):
        return
  finally:  # Also when the batch step stops it: where the tasks got to.
    lines.tick(final=True)


def define_flags(flag_values=flags.FLAGS):
  """Defines the flags of `estimator-dist progress` on `flag_values`; their FlagHolders
  (mailbox, model_dir, every)."""
  f = flag_values
  return (flags.DEFINE_string("mailbox", None, "The job's mailbox, where its tasks beat "
                              "(their ESTIMATOR_DIST_MAILBOX); required.", required=True,
                              flag_values=f),
          flags.DEFINE_string("model_dir", None, "The job's model_dir (its evaluations).",
                              flag_values=f),
          flags.DEFINE_float("progress_secs", 30, "A line this often.", lower_bound=0.1,
                             flag_values=f))


def run():
  mailbox, model_dir, every = define_flags()

  def main(_):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # The batch step ends it.
    if not os.path.isdir(mailbox.value):
      command_line.write_error(f"--mailbox={mailbox.value} is not a directory: give the "
                               f"job's mailbox (its tasks' ${env_vars.MAILBOX})", "progress")
      return errors.USAGE_EXIT_CODE
    watch(mailbox=mailbox_lib.Mailbox(mailbox.value), model_dir=model_dir.value, every_secs=every.value)
    return 0
  command_line.run(main, command="progress")
