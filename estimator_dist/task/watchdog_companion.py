"""The watchdog's companion process: what `watchdog.start` runs beside a task.

  python -S watchdog_companion.py TASK TIMEOUT LAUNCHER HEARTBEAT PEERS ERROR

`watchdog` runs this file with the task's own interpreter, by its path and with -S: no
site-packages, hence no import of estimator_dist (whose import looks for TensorFlow) and
nothing but the standard library, so it starts in milliseconds in every task. The
arguments: TASK names the task ("worker:1"); TIMEOUT is the startup timeout in seconds
(0: none, for a task that does not train); LAUNCHER is the "pid:start time" of the
launcher whose end ends the task ("": none); HEARTBEAT is the file to beat until the
first step ("": none); PEERS is a JSON list of [name, address] of the tasks it waits for;
ERROR is how its line starts (command_line.error_line's, which it cannot import).

It reads the task's phases (PHASES), one a line, from stdin; NEW_ROUND (a later train()
of the program) starts them again, its start watched as the first's. It exits with 0 when stdin
closes (the task ended), when its parent is no longer the task, and right after it
killed the task with SIGKILL, having printed why on stderr ("estimator-dist: error: ...").
A task that ended (however: an exception, a signal, the kernel's OOM killer) before its
training did (no phase "ended", no HEARTBEAT.ended) gets HEARTBEAT.exited, which the launcher reads where
it cannot see the task's exit (a Horovod rank of horovodrun): contract/heartbeat.py.

Once HEARTBEAT.ended says the task's training ended, the task does what its program does
next (an evaluation, an export, a wait on a peer) and its hooks no longer beat: this
touches HEARTBEAT.busy about once a second while the task and its descendants use CPU (at
least BUSY_SHARE of one CPU since the last touch), and removes it when the task ends, so
that the watchers (the local launcher's, SLURM's, Spark's) tell work after training from
a wait that never ends, by the beats alone. A session waiting for a task that has exited
uses no CPU at all (measured: 0.00 s in 10 s), while any work uses about a second per
second.
"""

import json
import os
import select
import signal
import socket
import sys
import time

PHASES = ("started", "cluster reached", "session created", "training", "ended")
NEW_ROUND = "new round"  # A line that starts the phases again at "cluster reached".
# Field 22 of /proc/PID/stat (proc(5)), counted after the command name: the start time,
# which tells a process from a later one that got its pid (as in the launcher's identity,
# contract/process_identity.py, which this program cannot import).
START_TIME_FIELD = 19
# Fields 4 (the parent) and 14-17 (user and system time, then those of reaped children).
PARENT_FIELD, CPU_FIELDS = 1, slice(11, 15)
# Work after training: at least this share of one CPU since the last touch, and at least
# the least CPU time counted, so the slow polling of a waiting process never counts.
BUSY_SHARE, BUSY_LEAST_SECS = 0.01, 0.05


def process_stat(pid):
  """The fields of /proc/PID/stat after the command name (which may hold spaces and
  parentheses); None when there is no such process."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()
  except OSError:
    return None


def answers(address):
  """Whether something accepts a connection at "host:port" (an IPv6 host in brackets)."""
  host, _, port = address.rpartition(":")
  try:
    socket.create_connection((host.strip("[]"), int(port)), timeout=1).close()
    return True
  except (OSError, ValueError):
    return False


def startup_timeout_message(*, task, phase, waited, timeout, peers):
  """Why `task` is stopped after `waited` seconds in `phase`: the peers that do not
  answer now, or that all of them do."""
  silent = [f"{name} at {address}" for name, address in peers if not answers(address)]
  waiting = (f"for {', '.join(silent)} (no answer)" if silent else
             "although every peer answers (one of them may be stuck)" if peers else
             "with no peer")
  return (f"{task} has waited {waited:.0f} s in phase '{phase}' {waiting}; it did not "
          f"start training within the startup timeout of {timeout:g} s "
          f"(ESTIMATOR_DIST_STARTUP_TIMEOUT_SECS; launcher: --startup_timeout_secs). "
          f"Check that every task of the cluster runs and can reach the others.")


def family_cpu_secs(root, skip):
  """CPU seconds of process `root` and its descendants (pids as /proc names them, reaped
  children included), less `skip`'s (this companion's)."""
  children, used = {}, {}
  for pid in os.listdir("/proc"):
    fields = pid.isdigit() and process_stat(pid)
    if fields:
      children.setdefault(fields[PARENT_FIELD], []).append(pid)
      used[pid] = sum(int(ticks) for ticks in fields[CPU_FIELDS])
  total, family = 0, [str(root)]
  while family:
    pid = family.pop()
    if pid != skip:
      total += used.get(pid, 0)
      family += children.get(pid, [])
  return total / os.sysconf("SC_CLK_TCK")


class Busy:
  """Touches BEAT.busy while the task, its training ended, uses CPU (the module's
  docstring). A look scans /proc (2 ms here), once a second, only after training."""

  def __init__(self, beat, task_in_proc):
    self._beat, self._task = beat, task_in_proc
    self._self = os.path.basename(os.readlink("/proc/self"))
    self._mark, self._next_look = None, 0.0  # (CPU seconds, time) at the last touch

  def look(self):
    if not self._beat or time.monotonic() < self._next_look:
      return
    self._next_look = time.monotonic() + 1
    if not os.path.exists(self._beat + ".ended"):
      self._mark = None  # Training (again: the program's next train()).
      return
    used, now = family_cpu_secs(self._task, self._self), time.monotonic()
    if self._mark is None or used - self._mark[0] >= max(
        BUSY_LEAST_SECS, BUSY_SHARE * (now - self._mark[1])):
      self._mark = (used, now)
      _touch(self._beat + ".busy")

  def end(self):
    if self._beat:
      try:
        os.remove(self._beat + ".busy")
      except OSError:
        pass


def _stop(task_pid, message, error):
  """Says why (after `error`, how the line starts), kills the task and ends: nothing is
  left to watch."""
  sys.stderr.write(f"{error}{message}\n")
  sys.stderr.flush()
  os.kill(task_pid, signal.SIGKILL)
  sys.exit(0)


def _launcher_is_gone(launcher):
  """Whether the launcher "pid:start time" no longer runs (its pid may be another's)."""
  pid, _, start = launcher.partition(":")
  fields = process_stat(pid)
  return not fields or fields[START_TIME_FIELD] != start


def _beat(path, task_pid):
  """Touches the heartbeat file, unless the task is stopped (state t or T): a task
  stopped right after it started must look stuck to the launcher."""
  fields = process_stat(task_pid)
  if path and fields and fields[0] not in "tT":
    _touch(path)


def _touch(path):
  try:
    with open(path, "a"):
      os.utime(path)
  except OSError:
    pass  # Its directory is gone or full: the watcher says so, not a traceback.


def watch(*, task, timeout, launcher, beat, peers, error):
  """Watches this process's parent, the task, until it trains, ends, or is killed."""
  task_pid, phase, started = os.getppid(), PHASES[0], time.monotonic()
  # The task's entry in /proc, which may be the host's, mounted outside the job's PID
  # namespace, where the task has another pid: the parent /proc itself names.
  task_in_proc = (process_stat("self") or [None, task_pid])[1]
  next_probe, busy = started, Busy(beat, task_in_proc)
  while True:
    if select.select([sys.stdin], [], [], 0.5)[0]:
      line = sys.stdin.readline()
      if not line:  # The task ended.
        busy.end()
        if beat and phase != "ended" and not os.path.exists(beat + ".ended"):
          _touch(beat + ".exited")
        return
      phase = line.strip()
      if phase == NEW_ROUND:  # A later train(): its start is watched as the first's was.
        phase, started = "cluster reached", time.monotonic()
    if os.getppid() != task_pid:
      busy.end()
      return
    if launcher and _launcher_is_gone(launcher):
      _stop(task_pid, f"{task}: its launcher (pid {launcher.partition(':')[0]}) is gone; "
                      f"the task ends with it", error)
    if phase in ("training", "ended"):
      busy.look()  # From the first step on, HeartbeatHook beats and no timeout applies.
      continue
    if phase == "started" and time.monotonic() >= next_probe:
      next_probe = time.monotonic() + 1
      if peers and all(answers(address) for _, address in peers):
        phase = "cluster reached"
    _beat(beat, task_in_proc)
    waited = time.monotonic() - started
    if timeout and waited > timeout:
      _stop(task_pid, startup_timeout_message(task=task, phase=phase, waited=waited,
                                              timeout=timeout, peers=peers), error)


def main(argv):
  """Watches with the arguments this module's docstring names; exits with 0."""
  task, timeout, launcher, beat, peers, error = argv[1:7]
  watch(task=task, timeout=float(timeout), launcher=launcher, beat=beat,
        peers=json.loads(peers), error=error)
  sys.exit(0)


if __name__ == "__main__":
  main(sys.argv)
