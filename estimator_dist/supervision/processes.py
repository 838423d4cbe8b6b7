"""The processes of a job: started, their output copied with a prefix (task_output), and
all stopped.

A task's processes are its process group and every descendant; stopping a task stops
them all, and a task dies with the launcher. A `TaskGroup` holds the tasks of one job and
watches every process of each: its exit, its heartbeat, and whether it is stopped.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import process_identity
from estimator_dist.contract import rounds
from estimator_dist.supervision import hangs as hangs_lib
from estimator_dist.supervision import job_dirs
from estimator_dist.supervision import process_tree
from estimator_dist.supervision import task_output


_GRACEFUL = (signal.SIGTERM, signal.SIGUSR1)  # The signals by which a job is preempted.
# A round the chief made that a worker ended without (contract/rounds.py) stops the job
# after this long: a worker that failed, and posted its calls as it exited, is seen to.
_UNEVEN_SECS = 2.0


class Task:
  """One child process, its output copied line by line with a prefix (task_output; `logs`
  keeps all of it and chooses what `out` shows).

  `tail` keeps its last lines, for an error message; `printed_summaries` are the summary
  lines it printed.
  """

  def __init__(self, name, command, env, out, *, logs=None):
    self.name = name
    self._output = task_output.Output(name, out, logs=logs)
    self.tail = self._output.tail
    self.process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=process_identity.die_with_parent)
    self._output.copy(self.process)

  @property
  def printed_summaries(self):
    return self._output.printed_summaries

  def join_output(self, timeout):
    """Waits (at most `timeout` seconds) until the task's output is copied."""
    self._output.join(timeout)

  def stop(self, grace_secs=0.0):
    """Stops every process of this task (see `stop_tasks`)."""
    stop_tasks([self], grace_secs)

  def family(self, table=None):
    """The task's process and every descendant (mpirun starts its ranks in process groups
    of their own); `table`: process_tree.process_table()."""
    table = table or process_tree.process_table()
    return {self.process.pid, *process_tree.descendants(self.process.pid, table)}


def stop_tasks(tasks, grace_secs=0.0):
  """Stops every process of every task at once.

  Without a grace, each task's processes are frozen (SIGSTOP: none runs another step),
  found again (a frozen process cannot fork) and killed. With one, they get SIGTERM and,
  `grace_secs` later, SIGKILL: horovodrun then stops the ranks it started on other hosts.
  The semaphores and shared memory of Python's multiprocessing that they mapped go too
  (`job_dirs.remove_multiprocessing_files`).
  """
  tasks = list(tasks)
  first = signal.SIGTERM if grace_secs > 0 else signal.SIGSTOP
  families = [task.family() for task in tasks]
  mapped = process_tree.shared_memory_files(set().union(*families))
  for task, family in zip(tasks, families):
    process_tree.signal_all(task.process.pid, family, first)
  deadline = time.monotonic() + grace_secs
  while (grace_secs > 0 and any(map(process_tree.alive, families)) and
         time.monotonic() < deadline):
    time.sleep(0.05)
  for task, family in zip(tasks, families):
    family |= task.family()
    process_tree.signal_all(task.process.pid, family, signal.SIGKILL)
  deadline = time.monotonic() + 5
  for task, family in zip(tasks, families):
    try:
      task.process.wait(max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
      pass
    while process_tree.alive(family) and time.monotonic() < deadline:
      time.sleep(0.05)
  job_dirs.remove_multiprocessing_files(mapped)
  for task in tasks:
    task.join_output(max(deadline - time.monotonic(), 0.5))


def _exit_code(returncode):
  return 128 - returncode if returncode < 0 else returncode


def stop_on_signals(group):
  """Makes SIGINT and SIGHUP (unless ignored, as under nohup) stop every task of `group`
  and exit with 128 + the signal; returns the handlers they had. SIGTERM and SIGUSR1 do
  the same where the group has no preemption grace; with one, the first asks the tasks
  to save and stop (`TaskGroup.preempt`), and a second stops them at once.

  Once the stop began, they are ignored (`ignore_signals`): a second Ctrl-C would cut
  the stop, and the removal of the job's directories, short.
  """
  handled = [signal.SIGINT, *_GRACEFUL] + (
      [signal.SIGHUP] if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN else [])

  def on_signal(signum, _):
    if signum in _GRACEFUL and group.preemption_grace_secs and not group.preemption_asked:
      # Only marked here: the handler may run in the middle of a write of the launcher.
      group.preemption_asked = (f"signal {signum} ({signal.Signals(signum).name})",
                                128 + signum)
      return
    ignore_signals(handled)
    group.log(f"signal {signum}: stopping all tasks")
    group.stop_all()
    sys.exit(128 + signum)
  return {s: signal.signal(s, on_signal) for s in handled}


def ignore_signals(signals):
  for s in signals:
    signal.signal(s, signal.SIG_IGN)


class TaskGroup:
  """The tasks of one job: starts them, watches them, and stops them all on failure or
  signal; `log` writes the launcher's own lines."""

  def __init__(self, *, out=sys.stdout, mailbox=False, hang_timeout_secs=None,
               startup_timeout_secs=0, stop_grace_secs=0.0, preemption_grace_secs=0.0):
    """mailbox: whether the tasks get a mailbox (`self.mailbox`: contract/mailbox.py),
    made new for each start of the job; preemption_grace_secs: how long tasks asked to
    save and stop get (`preempt`)."""
    self.out = out
    self.tasks = []
    self.hang_timeout_secs, self.startup_timeout_secs = hang_timeout_secs, startup_timeout_secs
    self.stop_grace_secs, self.preemption_grace_secs = stop_grace_secs, preemption_grace_secs
    self.preemption_asked = None  # (why, exit code if the grace runs out), by a signal.
    self._preemption = None  # (deadline, exit code once it passed, pids signalled)
    self._directories = []
    self.mailbox = mailbox_lib.Mailbox(self.temporary_directory("mailbox")) if mailbox else None
    self.summary = None  # The chief's, once the job ended (the launcher reads it).
    self.task_logs = None  # Where every line goes, what is shown: shown_output.TaskLogs.

  def temporary_directory(self, kind, parent=None):
    """A new directory (in `parent`, default the system's), removed when the group
    closes (or by the next launch, if this one is killed: job_dirs)."""
    self._directories.append(job_dirs.make(kind, parent))
    return self._directories[-1]

  def log(self, message):
    command_line.write(self.out, message, command="launch")

  def start(self, name, command, env):
    self.tasks.append(Task(name, command, env, self.out, logs=self.task_logs))

  def preempt(self, why, *, exit_code):
    """Asks every task to save and stop: SIGUSR1 to each of their processes that catches
    it (the programs, which agree on a step: task/preemption.py; mpirun, which forwards
    it), also to those that catch it later. `wait` gives them preemption_grace_secs, then
    stops them at once and returns `exit_code`."""
    grace = self.preemption_grace_secs
    self.preemption_asked = self.preemption_asked or (why, exit_code)
    self._preemption = (time.monotonic() + grace, exit_code, set())
    self.log(f"{why}: preemption: every task stops at one agreed step and the chief saves "
             f"a checkpoint there, within {grace:g}s (a second signal stops them at once)")
    self._ask_to_save()

  def _ask_to_save(self):
    signalled, table = self._preemption[2], process_tree.process_table()
    for task in self.tasks:
      for pid in task.family(table) - signalled:
        if process_tree.catches(pid, signal.SIGUSR1):
          signalled.add(pid)
          with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGUSR1)

  def stop_all(self):
    """Stops every task at once."""
    stop_tasks(self.tasks, self.stop_grace_secs)

  def forget_tasks(self):
    """Stops every task and forgets them, for a new start of the job."""
    self.stop_all()
    self.tasks = []

  def close(self):
    self.stop_all()
    for directory in self._directories:
      shutil.rmtree(directory, ignore_errors=True)

  def ours(self, code):
    """Whether the toolkit chose exit `code` in a task of this attempt (its verdict in the
    mailbox): only then is it read as the toolkit's. Without a mailbox (tasks on other
    hosts) a code of the toolkit's is taken for its verdict."""
    if code == errors.PREEMPTED_EXIT_CODE and self.mailbox:
      return mailbox_lib.preempted(self.mailbox)
    return not self.mailbox or code in mailbox_lib.verdict_codes(self.mailbox)

  def _saved_on_preemption(self):
    """The step the chief saved on a preemption of this attempt (its mailbox), or None."""
    return mailbox_lib.saved_on_preemption(self.mailbox) if self.mailbox else None

  def wait(self, training, shutdown_timeout_secs, beating=None, on_tick=None):
    """Waits for the `training` tasks; returns the exit code of the job.

    `beating` names the heartbeats expected (None: the training tasks'); `on_tick` is
    called at every look (live_progress).
    """
    deadline = uneven_since = None
    hangs = self.hang_timeout_secs and hangs_lib.Hangs(
        mailbox=self.mailbox, timeout_secs=self.hang_timeout_secs,
        first_beat_secs=self.startup_timeout_secs,
        expected=training if beating is None else beating, log=self.log)
    while True:
      # One look at every exit code per round: a task that ends after it is still
      # running in this round, so its code is read in the next, never taken for 0.
      codes = [(task, task.process.poll()) for task in self.tasks]
      if self.preemption_asked and not self._preemption:
        why, exit_code = self.preemption_asked
        self.preempt(why, exit_code=exit_code)
      for task, code in codes:
        preempted = code == errors.PREEMPTED_EXIT_CODE and self.ours(code)
        if preempted and not self._preemption:
          self.preempt(f"{task.name} was preempted", exit_code=1)
        if code not in (None, 0) and not preempted:
          saved = self._saved_on_preemption()
          if saved is not None:  # The work is saved: a preempted job, however it ends.
            self.log(f"{task.name} exited with code {code} after the chief saved step "
                     f"{saved} on the preemption; stopping the other tasks")
            self.stop_all()
            return errors.PREEMPTED_EXIT_CODE
          self.log(f"{task.name} exited with code {code}; stopping the other tasks")
          self.stop_all()
          return _exit_code(code)
      if hangs and (hung := hangs.found(self.tasks)):
        self.stop_all()
        return hung
      uneven = self.mailbox and rounds.unmatched(self.mailbox)
      uneven_since = (uneven_since or time.monotonic()) if uneven else None
      if uneven and time.monotonic() - uneven_since >= _UNEVEN_SECS:
        self.log(f"{uneven} Stopping the job")
        self.stop_all()
        return 1
      running = [task for task, code in codes if code is None]
      if not running:
        preempted = any(code == errors.PREEMPTED_EXIT_CODE for _, code in codes)
        return errors.PREEMPTED_EXIT_CODE if preempted else 0
      if self._preemption:
        until, exit_code, _ = self._preemption
        if time.monotonic() > until:
          names = ", ".join(t.name for t in running)
          self.stop_all()
          trained = [code for t, code in codes if t.name in training]
          saved = self._saved_on_preemption()
          if saved is not None or (
              trained and all(code == errors.PREEMPTED_EXIT_CODE for code in trained)):
            self.log(f"the chief saved {'' if saved is None else f'step {saved} '}on the "
                     f"preemption; {names} had not ended within "
                     f"{self.preemption_grace_secs:g}s and were stopped")
            return errors.PREEMPTED_EXIT_CODE
          self.log(f"{names} did not save and stop within {self.preemption_grace_secs:g}s; "
                   f"every task was stopped at once (the latest complete checkpoint stays)")
          return exit_code
        self._ask_to_save()  # A task whose program catches the signal only now.
      if on_tick:
        on_tick()
      if not any(t.name in training for t in running):
        deadline = deadline or time.monotonic() + shutdown_timeout_secs
        if time.monotonic() > deadline:
          names = ", ".join(t.name for t in running)
          self.log(f"training ended but {names} did not exit within "
                   f"{shutdown_timeout_secs}s; stopping them")
          self.stop_all()
          return 1
      process_tree.sleep_until_one_ends([t.process.pid for t in running], 0.2)


def child_env(**extra):
  """The environment of a task: this one without TF_CONFIG, unbuffered, plus `extra`."""
  env = dict(os.environ)
  env.pop("TF_CONFIG", None)
  env["PYTHONUNBUFFERED"] = "1"
  env.update({k: v for k, v in extra.items() if v is not None})
  return env
