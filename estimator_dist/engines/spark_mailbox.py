"""What Spark's driver keeps in the job's mailbox (contract/mailbox.py), new in the shared
model_dir for each run: while the job runs, a thread prints the progress lines of the
tasks' heartbeats there; once it ended, the driver checks what the local launcher checks
(every task of a distributed job started its strategy; the chief's summary record). No
Spark here: `engines.spark` runs the job.
"""

import contextlib
import logging
import os
import shutil
import sys
import threading
import uuid

from estimator_dist import command_line
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import joined
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import summary
from estimator_dist.watching import progress_watch


@contextlib.contextmanager
def made(model_dir, application_id, *, progress_secs, hang_timeout_secs=0, on_hang=None):
  """The job's mailbox, new in `model_dir`, while a thread of the driver prints progress
  lines from the beats there every `progress_secs` (0: none), and calls `on_hang()` when
  a task's beats stop for `hang_timeout_secs` (0: never; `progress_watch`); None when
  there is no model_dir the driver can write."""
  if not model_dir or checkpoint_names.is_url(model_dir):
    yield None
    return
  mailbox = mailbox_lib.Mailbox(os.path.join(
      os.path.abspath(model_dir), checkpoint_names.TOOLKIT_DIR,
      f"mailbox-spark-{application_id}-{os.getpid()}-{uuid.uuid4().hex[:8]}"))
  try:
    mailbox.emptied()
  except OSError as e:
    logging.warning(command_line.line("no mailbox, no progress lines: %s"), e)
    yield None
    return
  stop = threading.Event()
  watcher = (progress_secs or hang_timeout_secs) and threading.Thread(
      target=progress_watch.watch, name="estimator_dist progress", daemon=True,
      kwargs=dict(mailbox=mailbox, model_dir=model_dir, every_secs=progress_secs,
                  stop=stop, hang_timeout_secs=hang_timeout_secs, on_hang=on_hang))
  if watcher:
    watcher.start()
  try:
    yield mailbox
  finally:
    stop.set()
    if watcher:
      watcher.join()
    shutil.rmtree(mailbox.directory, ignore_errors=True)


def check_end(mailbox, job):
  """After the job's Spark stage succeeded: raises unless each task of the barrier stage
  that reached the mailbox joined the job's strategy (a function that ignores the
  cluster trains alone on every task); a missing or spoiled summary record is one line,
  and the results stand. Tasks that did not reach it (executors that do not share it) are
  named in one line, unchecked. The ranks of a function under horovod (started by
  horovod.spark) say nothing and are not checked; a program file's say they started."""
  if mailbox is None:
    return
  reached = set(mailbox.names(mailbox_lib.REACHED))

  def say(line):
    command_line.write(sys.stderr, line)
  if reached and job.strategy != "local":
    unseen = sorted(set(job.task_names) - reached)
    if unseen:
      say(f"{', '.join(unseen)} did not reach the job's mailbox in the model_dir (their "
          f"executors do not share it): whether they joined the job's strategy is not checked")
    missing = joined.not_joined(mailbox, reached & set(job.task_names), strategy=job.strategy)
    if missing:
      raise RuntimeError(command_line.line(
          f"the Spark job failed: {joined.failure(missing, strategy=job.strategy)}"))
  if reached or mailbox.names(mailbox_lib.JOINED):
    summary.read_record(mailbox, expected=True, warn=say)
