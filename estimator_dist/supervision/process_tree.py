"""A job's processes: the table of every process, a task's descendants, which are alive,
which catch a signal, what they map of /dev/shm; signals to them all.

psutil reads the processes, as Horovod's runner does. Two facts it does not give are read
from Linux's /proc here: the signals a process catches (SigCgt of /proc/PID/status) and
the device and inode of what it maps (/proc/PID/maps; psutil gives paths only).
"""

import os
import select
import time

import psutil


def catches(pid, sig):
  """Whether process `pid` has a handler for `sig` (SigCgt of /proc/PID/status)."""
  try:
    with open(f"/proc/{pid}/status") as f:
      caught = next(line for line in f if line.startswith("SigCgt:"))
  except (OSError, StopIteration):
    return False
  return bool(int(caught.split()[1], 16) >> (sig - 1) & 1)


def signal_all(group, pids, sig):
  for kill, target in [(os.killpg, group)] + [(os.kill, pid) for pid in pids]:
    try:
      kill(target, sig)
    except (ProcessLookupError, PermissionError):
      pass


def sleep_until_one_ends(pids, secs):
  """Sleeps `secs`, or less: until one of the child processes `pids` ends (its pidfd
  becomes readable; where Linux has no pidfd, the whole `secs`)."""
  ends = []
  try:
    for pid in pids:
      ends.append(os.pidfd_open(pid))
    watch = select.poll()
    for end in ends:
      watch.register(end, select.POLLIN)
    watch.poll(secs * 1000)
  except ProcessLookupError:  # It ended, and was waited for, already.
    pass
  except OSError:  # No pidfd here (Linux before 5.3, a seccomp filter).
    time.sleep(secs)
  finally:
    for end in ends:
      os.close(end)


def alive(pids):
  """Those of `pids` that run (not zombies)."""
  alive = []
  for pid in pids:
    try:
      if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        alive.append(pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
      pass
  return alive


def shared_memory_files(pids):
  """{(device, inode)} of the files of /dev/shm that processes `pids` map (/proc/PID/maps).

  Not names: glibc makes a POSIX semaphore under a temporary name, maps it, links it to
  its own name and removes the temporary one, so its maker's map shows the removed name.
  """
  files = set()
  for pid in pids:
    try:
      with open(f"/proc/{pid}/maps") as f:
        for line in f:
          if " /dev/shm/" in line:
            _, _, _, device, inode, _ = line.split(None, 5)
            major, minor = device.split(":")
            files.add((os.makedev(int(major, 16), int(minor, 16)), int(inode)))
    except (OSError, ValueError):
      pass
  return files


def process_table():
  """{pid: (parent pid, status, name)} of every process; the status is psutil's
  (psutil.STATUS_STOPPED, ...)."""
  table = {}
  # A new Process for each pid: psutil.process_iter's cached ones skip a pid that a new
  # process took since, which would hide it and its descendants from this table.
  for pid in psutil.pids():
    try:
      process = psutil.Process(pid)
      with process.oneshot():
        table[pid] = (process.ppid(), process.status(), process.name())
    except psutil.Error:  # Ended meanwhile.
      continue
  return table


def stopped(status):
  """Whether a process of `status` (process_table's) is stopped: by a signal, or by a
  debugger."""
  return status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)


def descendants(pid, table=None):
  """The pids of every process descended from `pid`; `table`: process_table()."""
  children = {}
  for child, (parent, _, _) in (table or process_table()).items():
    children.setdefault(parent, []).append(child)
  found, todo = [], [pid]
  while todo:
    for child in children.get(todo.pop(), []):
      found.append(child)
      todo.append(child)
  return found
