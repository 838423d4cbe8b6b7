"""A job's processes as Linux shows them (/proc): the table of every process, a task's
descendants, which are alive, which catch a signal, what they map of /dev/shm; signals to
them all."""

import os
import select
import signal
import time


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


def pin(pid, cpus):
  """Pins every thread of process `pid` to `cpus` (nothing for one that has ended)."""
  try:
    threads = os.listdir(f"/proc/{pid}/task")
  except OSError:
    return
  for thread in threads:
    try:
      os.sched_setaffinity(int(thread), cpus)
    except OSError:  # A thread that has ended.
      pass


def alive(pids):
  alive = []
  for pid in pids:
    try:
      with open(f"/proc/{pid}/stat") as f:
        if f.read().rsplit(")", 1)[1].split()[0] != "Z":
          alive.append(pid)
    except (OSError, IndexError):
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


def die_with_parent():
  """Linux: the child gets SIGKILL if the launcher dies without cleaning up."""
  try:
    import ctypes  # pylint: disable=g-import-not-at-top
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
  except OSError:
    pass
