"""A task of a sweep's trial, started from the sweep's fork server (forkserver):

  python -I -S forkserver_client.py SOCKET PREFIX COMMAND...

(SOCKET: the fork server's; PREFIX: how the client's own lines start.)

It hands the fork server COMMAND, its environment, working directory, CPUs, umask,
standard streams and namespaces, and ends as the task ended. The launcher counts the task
among this client's processes and signals it directly: the client ignores a preemption's
signals, which reach it too. Where the server is gone or refuses, it runs COMMAND itself.
It runs in the job's namespaces, before anything else of the task, so it imports the
standard library alone (and is found by its path: `-S` leaves the packages out).
"""

import json
import os
import shutil
import signal
import socket
import struct
import sys

PREEMPTION = (signal.SIGTERM, signal.SIGUSR1)  # task.preemption.SIGNALS
# forkserver_process: its _ENTERED and _SAME, in that order.
NAMESPACES = ("net", "pid", "user", "mnt", "uts", "ipc", "cgroup")
_ANSWER_SECS = 30  # A fork server that does not answer by then is stuck.


def _as_command(command, why, prefix):
  for signum in PREEMPTION:
    signal.signal(signum, signal.SIG_DFL)
  sys.stderr.write(f"{prefix}the sweep's fork server did not start this task ({why}); it "
                   f"starts as its command\n")
  os.execvpe(command[0], command, os.environ)


def _request(command):
  umask = os.umask(0)
  os.umask(umask)
  executable = shutil.which(command[0]) or command[0]
  request = json.dumps({"executable": os.path.abspath(executable), "argv": command,
                        "env": dict(os.environ), "cwd": os.getcwd(), "umask": umask,
                        "cpus": sorted(os.sched_getaffinity(0))}).encode()
  return struct.pack("!I", len(request)) + request


def main(path, prefix, command):
  for signum in PREEMPTION:  # The launcher sends them to the task too.
    signal.signal(signum, signal.SIG_IGN)
  connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
  namespaces = []
  try:
    connection.settimeout(_ANSWER_SECS)
    connection.connect(path)
    namespaces = [os.open(f"/proc/self/ns/{kind}", os.O_RDONLY) for kind in NAMESPACES]
    request = _request(command)
    sent = socket.send_fds(connection, [request], [0, 1, 2, *namespaces])
    connection.sendall(request[sent:])
    answers = connection.makefile("rb")
    answer = answers.readline().decode().strip()
    if answer == "ok":
      connection.settimeout(None)
  except OSError as e:
    answer = f"refused {e}"
  for fd in namespaces:
    os.close(fd)
  if answer != "ok":
    connection.close()
    _as_command(command, answer.partition(" ")[2] or "it did not answer", prefix)
  ended = answers.readline().decode().split()
  if len(ended) != 2:
    sys.stderr.write(f"{prefix}the sweep's fork server ended before this task\n")
    sys.exit(1)
  code = int(ended[1])
  if code < 0:  # Ends as the signal ended the task, as `nsenter` and a shell report it.
    if -code != signal.SIGKILL:  # Its action cannot be set: it is the default.
      signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
  sys.exit(code)


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2], sys.argv[3:])
