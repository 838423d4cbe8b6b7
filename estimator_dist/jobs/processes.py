"""The processes of a job: started, their output copied with a prefix, and all stopped.

A task's processes are its process group and every descendant; stopping a task stops
them all, and a task dies with the launcher. A `TaskGroup` holds the tasks of one job and
watches every process of each: its exit, its heartbeat, and whether it is stopped.
"""

import collections
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from estimator_dist import errors
from estimator_dist.jobs import job_dirs
from estimator_dist.jobs import progress
from estimator_dist.task import heartbeat
from estimator_dist.task import summary


# horovodrun's line tags: "[1]<stdout>:" under Gloo, "[1,1]<stdout>:" under MPI.
_HOROVOD_LINE = re.compile(r"^\[(?:\d+,)?(\d+)\]<std(?:out|err)>:(.*)$")

class Task:
  """One child process; its output is copied line by line with a prefix.

  `tail` keeps its last lines, for an error message.
  """

  def __init__(self, name, command, env, out):
    self.name = name
    self.summaries = []
    self.tail = collections.deque(maxlen=20)
    self.process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent)
    self._thread = threading.Thread(target=self._copy, args=(out,), daemon=True)
    self._thread.start()

  def _copy(self, out):
    for raw in iter(self.process.stdout.readline, b""):
      line = raw.decode("utf-8", "replace").rstrip("\n")
      match = _HOROVOD_LINE.match(line)
      prefix = f"[worker:{match.group(1)}]" if match else f"[{self.name}]"
      text = match.group(2) if match else line
      self.tail.append(text)
      fields = summary.parse_line(text)
      if fields:
        self.summaries.append(fields)
      out.write(f"{prefix} {text}\n")
      out.flush()

  def join_output(self, timeout):
    """Waits (at most `timeout` seconds) until the task's output is copied."""
    self._thread.join(timeout)

  def stop(self, grace_secs=0.0):
    """Stops every process of this task (see `stop_tasks`)."""
    stop_tasks([self], grace_secs)

  def family(self, table=None):
    """The task's process and every descendant (mpirun starts its ranks in process
    groups of their own, so the group alone is not enough); `table`: _process_table()."""
    return {self.process.pid, *_descendants(self.process.pid, table)}


def stop_tasks(tasks, grace_secs=0.0):
  """Stops every process of every task at once.

  Without a grace, each task's processes are frozen (SIGSTOP: none runs another step),
  found again (a frozen process cannot fork) and killed. With one, they get SIGTERM and,
  `grace_secs` later, SIGKILL: horovodrun then stops the ranks it started on other hosts.
  """
  tasks = list(tasks)
  first = signal.SIGTERM if grace_secs > 0 else signal.SIGSTOP
  families = [task.family() for task in tasks]
  for task, family in zip(tasks, families):
    _signal_all(task.process.pid, family, first)
  deadline = time.monotonic() + grace_secs
  while grace_secs > 0 and any(map(_alive, families)) and time.monotonic() < deadline:
    time.sleep(0.05)
  for task, family in zip(tasks, families):
    family |= task.family()
    _signal_all(task.process.pid, family, signal.SIGKILL)
  deadline = time.monotonic() + 5
  for task, family in zip(tasks, families):
    try:
      task.process.wait(max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
      pass
    while _alive(family) and time.monotonic() < deadline:
      time.sleep(0.05)
  for task in tasks:
    task.join_output(max(deadline - time.monotonic(), 0.5))


def _signal_all(group, pids, sig):
  for kill, target in [(os.killpg, group)] + [(os.kill, pid) for pid in pids]:
    try:
      kill(target, sig)
    except (ProcessLookupError, PermissionError):
      pass


def _alive(pids):
  alive = []
  for pid in pids:
    try:
      with open(f"/proc/{pid}/stat") as f:
        if f.read().rsplit(")", 1)[1].split()[0] != "Z":
          alive.append(pid)
    except (OSError, IndexError):
      pass
  return alive


def _process_table():
  """{pid: (parent pid, state, name)} of every process (Linux /proc)."""
  table = {}
  for entry in os.listdir("/proc"):
    if entry.isdigit():
      try:
        with open(f"/proc/{entry}/stat") as f:
          name, rest = f.read().split("(", 1)[1].rsplit(")", 1)
        state, parent = rest.split()[:2]
        table[int(entry)] = (int(parent), state, name)
      except (OSError, ValueError, IndexError):
        continue
  return table


def _descendants(pid, table=None):
  """The pids of every process descended from `pid`; `table`: _process_table()."""
  children = {}
  for child, (parent, _, _) in (table or _process_table()).items():
    children.setdefault(parent, []).append(child)
  found, todo = [], [pid]
  while todo:
    for child in children.get(todo.pop(), []):
      found.append(child)
      todo.append(child)
  return found


def die_with_parent():
  """Linux: the child gets SIGKILL if the launcher dies without cleaning up."""
  try:
    import ctypes  # pylint: disable=g-import-not-at-top
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
  except OSError:
    pass


def _exit_code(returncode):
  return 128 - returncode if returncode < 0 else returncode


def stop_on_signals(group):
  """Makes SIGINT, SIGTERM and SIGHUP (unless ignored, as under nohup) stop every task
  of `group` and exit with 128 + the signal; returns the handlers they had.

  Once the stop began, they are ignored (`ignore_signals`): a second Ctrl-C would cut
  the stop, and the removal of the job's directories, short.
  """
  handled = [signal.SIGINT, signal.SIGTERM] + (
      [signal.SIGHUP] if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN else [])

  def on_signal(signum, _):
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

  def __init__(self, *, out=sys.stdout, heartbeats=False, hang_timeout_secs=None,
               stop_grace_secs=0.0):
    """heartbeats: whether the tasks get a directory to beat in (`self.heartbeats`)."""
    self.out = out
    self.tasks = []
    self.hang_timeout_secs = hang_timeout_secs
    self.stop_grace_secs = stop_grace_secs
    self._directories = []
    self.heartbeats = self.temporary_directory("heartbeats") if heartbeats else None
    self._idleness = progress.Idleness()

  def temporary_directory(self, kind, parent=None):
    """A new directory (in `parent`, default the system's), removed when the group
    closes (or by the next launch, if this one is killed: job_dirs)."""
    self._directories.append(job_dirs.make(kind, parent))
    return self._directories[-1]

  def log(self, message):
    self.out.write(f"[launch] {message}\n")
    self.out.flush()

  def start(self, name, command, env):
    self.tasks.append(Task(name, command, env, self.out))

  def stop_all(self):
    """Stops every task at once."""
    stop_tasks(self.tasks, self.stop_grace_secs)

  def forget_tasks(self):
    """Stops every task and forgets them, for a new start of the job."""
    self.stop_all()
    self.tasks, self._idleness = [], progress.Idleness()
    if self.heartbeats:
      for name in os.listdir(self.heartbeats):
        with contextlib.suppress(FileNotFoundError):  # A late task's rename.
          os.remove(os.path.join(self.heartbeats, name))

  def close(self):
    self.stop_all()
    for directory in self._directories:
      shutil.rmtree(directory, ignore_errors=True)

  def wait(self, training, shutdown_timeout_secs, beating=None, on_tick=None):
    """Waits for the `training` tasks; returns the exit code of the job.

    `beating` names the heartbeats expected (None: the training tasks'); `on_tick` is
    called at every look (live_progress).
    """
    deadline, started, stopped_since = None, time.time(), {}
    while True:
      # One look at every exit code per round: a task that ends after it is still
      # running in this round, so its code is read in the next, never taken for 0.
      codes = [(task, task.process.poll()) for task in self.tasks]
      for task, code in codes:
        if code not in (None, 0):
          self.log(f"{task.name} exited with code {code}; stopping the other tasks")
          self.stop_all()
          return _exit_code(code)
      table = _process_table() if self.hang_timeout_secs else None
      stopped = progress.stopped(self.tasks, stopped_since, table) if table else []
      watched = self.heartbeats if self.hang_timeout_secs else None
      stuck = watched and heartbeat.stalled(
          self.heartbeats, self.hang_timeout_secs, expected=training if beating is None else beating,
          started=started)
      if stuck:
        self.log(f"no training progress on {', '.join(stuck)} for {self.hang_timeout_secs}s "
                 f"(heartbeat{''.join(f'; {s}' for s, _ in stopped)}); stopping the job")
      too_long = [s for s, secs in stopped if secs >= self.hang_timeout_secs]
      if too_long and not stuck:
        self.log(f"{'; '.join(too_long)} for {self.hang_timeout_secs}s (SIGSTOP, or a "
                 f"debugger); stopping the job")
      idle = watched and self._idleness.stalled(
          self.tasks, heartbeat.ended(self.heartbeats), self.hang_timeout_secs, table)
      if idle and not (stuck or too_long):
        self.log(f"{', '.join(name for name, _ in idle)} ended its training and has made no "
                 f"progress since, for {idle[0][1]:.0f}s (it used no CPU: it waits for "
                 f"something, such as an export or evaluation whose session waits for a ps "
                 f"task that has exited); stopping the job")
      if stuck or too_long or idle:
        self.stop_all()
        return errors.STALLED_EXIT_CODE
      running = [task for task, code in codes if code is None]
      if not running:
        return 0
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
      time.sleep(0.2)


def child_env(**extra):
  """The environment of a task: this one without TF_CONFIG, unbuffered, plus `extra`."""
  env = dict(os.environ)
  env.pop("TF_CONFIG", None)
  env["PYTHONUNBUFFERED"] = "1"
  env.update({k: v for k, v in extra.items() if v is not None})
  return env
