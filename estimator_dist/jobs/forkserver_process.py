"""The fork server's process (jobs/forkserver), run as
`python -m estimator_dist.jobs.forkserver_process SOCKET`: it imports TensorFlow, then
listens on SOCKET, in a directory only its user can open, and forks a handler for each
client that connects:

- The handler reads the client's request and refuses, with a reason, what a fork would not
  run as the command itself (`_why_not`): another interpreter or interpreter options, not
  a file or module, another user, an environment that differs from the server's beyond
  what a launcher sets for each task (`_SET_PER_TASK`), namespaces other than a job's
  network and PID ones. The client then runs the command itself.
- Else it enters the client's network namespace, makes its PID namespace its children's
  (setns, by the namespaces' descriptors the client sent), forks the task there and
  records it as the client's (`forkserver.TASKS`). It waits for the task's end, sent to
  the client as its wait status, or for the client's, which kills the task. It starts no
  thread (a process whose children go to another PID namespace cannot) and ignores the
  signals by which a job is stopped: the programs' handlers get them, it must not die of
  them first.
- The task dies with the handler, and becomes the client's command: its standard streams,
  working directory, umask, CPUs, environment, a session of its own, Python's default
  signal handlers, numpy's seed drawn again. Back at this module's top level, it runs the
  program as `python FILE` or `python -m MODULE` would, in a new `__main__`, and ends
  through the interpreter's own exit.
"""

import builtins
import contextlib
import ctypes
import importlib.machinery
import importlib.util
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import tempfile
import time
import types
import zipfile

from estimator_dist.contract import env_vars
from estimator_dist.contract import process_identity
from estimator_dist.contract import whole_file
from estimator_dist.jobs import forkserver
from estimator_dist.jobs import process_tree

# What a launcher sets for each task: the only variables whose values may differ from the
# server's (any other may have been read as Python started or TensorFlow was imported).
_SET_PER_TASK = {"TF_CONFIG", "TMPDIR", "CUDA_VISIBLE_DEVICES", "FI_PROVIDER",
                 *(value for name, value in vars(env_vars).items() if name.isupper())}
_SET_PER_TASK_PREFIXES = ("OMPI_MCA_",)
# The namespaces a task enters (a local job's sandbox makes them); any other that differs
# from the server's makes it start as its command. The client sends their descriptors.
_ENTERED = ("net", "pid")
_SAME = ("user", "mnt", "uts", "ipc", "cgroup")
_STREAMS = 3
_STOPPING = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP)


def serve(path):
  """Imports TensorFlow, then forks a handler for each client that connects to `path`;
  returns (the command, the path after its program's directory) in a task only."""
  started_at, started_with = time.monotonic(), dict(os.environ)  # TensorFlow sets some.
  try:
    os.close(os.pidfd_open(os.getpid()))  # How a handler waits for its task.
  except OSError as e:
    _log(f"cannot serve: Linux has no pidfd here ({e}); tasks start as their command")
    sys.exit(1)
  import tensorflow  # pylint: disable=g-import-not-at-top,unused-import
  import tensorflow_estimator  # pylint: disable=g-import-not-at-top,unused-import
  # What `python PROGRAM` has on sys.path after the program's own directory.
  base_path = sys.path if sys.flags.safe_path else sys.path[1:]
  signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # Each forked handler is reaped.
  tasks = os.path.join(os.path.dirname(path), forkserver.TASKS)
  os.makedirs(tasks, exist_ok=True)
  with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
    server.bind(f"{path}.new")
    server.listen(64)
    os.rename(f"{path}.new", path)  # Ready: `path` is there once it listens.
    _log(f"ready in {time.monotonic() - started_at:.1f}s")
    while True:
      connection, _ = server.accept()
      if os.fork() == 0:
        break
      connection.close()
  program = None
  try:
    program = _handle(connection, tasks, started_with)
  except BaseException:  # pylint: disable=broad-except
    with contextlib.suppress(BaseException):
      sys.excepthook(*sys.exc_info())
  finally:
    if program is None:  # The handler.
      os._exit(0)  # pylint: disable=protected-access
  return program, base_path


def _log(line):
  sys.stdout.write(f"{time.strftime('%H:%M:%S')} forkserver {os.getpid()}: {line}\n")


def _handle(connection, tasks, started_with):
  """In a handler: reads a client's request, forks its task in its namespaces, records it
  as the client's (`tasks`: the directory), and answers with the task's wait status
  (`started_with`: the server's environment as it started). Returns the command in the
  task, None in the handler."""
  for signum in _STOPPING:
    signal.signal(signum, signal.SIG_IGN)
  signal.signal(signal.SIGCHLD, signal.SIG_DFL)
  request, descriptors = _receive(connection)
  streams, namespaces = descriptors[:_STREAMS], dict(zip(_ENTERED + _SAME,
                                                         descriptors[_STREAMS:]))
  try:
    peer_pid, peer_uid, _ = struct.unpack(
        "3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    refusal = _why_not(request, peer_uid=peer_uid, streams=streams, namespaces=namespaces,
                       started_with=started_with)
    if refusal is None:
      _enter(namespaces)
  except OSError as e:
    refusal = str(e)
  if refusal is not None:
    connection.sendall(f"refused {refusal}\n".encode())
    return None
  handler = os.pidfd_open(os.getpid())
  task = os.fork()
  if task == 0:
    try:
      process_tree.die_with_parent()
      if select.select([handler], [], [], 0)[0]:  # It ended before that took hold.
        os._exit(1)  # pylint: disable=protected-access
      os.close(handler)
      connection.close()
      _become_task(request, streams)
      for fd in descriptors:
        if fd > 2:
          os.close(fd)
    except BaseException:  # pylint: disable=broad-except
      sys.excepthook(*sys.exc_info())  # To the client's stderr, once it is the task's.
      os._exit(1)  # pylint: disable=protected-access
    return request["argv"]
  for fd in [handler, *descriptors]:
    os.close(fd)
  record, reaped = os.path.join(tasks, str(peer_pid)), False
  try:
    whole_file.write_json(record, process_identity.launcher_identity(task))
    _log(f"task {task} for client {peer_pid}: {' '.join(request['argv'][1:])}")
    connection.sendall(b"ok\n")
    code = _wait(connection, task)
    with contextlib.suppress(OSError):
      os.remove(record)
    os.waitpid(task, 0)  # Reaped once no record names it: its pid may be reused after.
    reaped = True
    if code is not None:
      with contextlib.suppress(BrokenPipeError):
        connection.sendall(f"exit {code}\n".encode())
  finally:
    if not reaped:  # A handler that fails takes its task with it.
      with contextlib.suppress(ProcessLookupError):
        os.kill(task, signal.SIGKILL)
      with contextlib.suppress(OSError):
        os.remove(record)
  return None


def _receive(connection):
  """(the request, the descriptors: the client's standard streams, its namespaces)."""
  data, descriptors, _, _ = socket.recv_fds(connection, 1 << 16,
                                            _STREAMS + len(_ENTERED + _SAME))
  if len(data) < 4:
    raise EOFError("the client sent no request")
  size, data = struct.unpack("!I", data[:4])[0], data[4:]
  while len(data) < size:
    more = connection.recv(size - len(data))
    if not more:
      raise EOFError("the client's request was cut short")
    data += more
  return json.loads(data), descriptors


def _why_not(request, *, peer_uid, streams, namespaces, started_with):
  """Why a fork of this server would not run the request as its command would; None
  where it would."""
  executable, program = request["executable"], request["argv"][1:]
  if executable != sys.executable:
    return f"it runs {executable}, not {sys.executable}"
  if not program or program[0].startswith("-") and (program[0] != "-m" or len(program) < 2):
    return "it is not `python FILE` or `python -m MODULE`"
  if program[0] != "-m" and not _source_file(os.path.join(request["cwd"], program[0])):
    return f"{program[0]} is not a Python source file"
  if peer_uid != os.getuid():
    return "another user asked"
  if len(streams) != _STREAMS or set(namespaces) != set(_ENTERED + _SAME):
    return "the client sent too few descriptors"
  env = request["env"]
  for name in sorted(set(env) | set(started_with)):
    per_task = name in _SET_PER_TASK or name.startswith(_SET_PER_TASK_PREFIXES)
    if not per_task and env.get(name) != started_with.get(name):
      return f"its {name} differs from the fork server's"
  for kind in _SAME:
    if not _same(namespaces[kind], kind):
      return f"it runs in another {kind} namespace"
  return None


def _source_file(path):
  """Whether `path` is a file of Python source (not a zip application, not bytecode)."""
  if not os.path.isfile(path) or zipfile.is_zipfile(path):
    return False
  with open(path, "rb") as f:
    return f.read(len(importlib.util.MAGIC_NUMBER)) != importlib.util.MAGIC_NUMBER


def _same(namespace, kind):
  """Whether the namespace of descriptor `namespace` is this process's of `kind`."""
  theirs, ours = os.fstat(namespace), os.stat(f"/proc/self/ns/{kind}")
  return (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino)


def _enter(namespaces):
  """Enters the client's network namespace, and makes its PID namespace this process's
  children's."""
  libc = ctypes.CDLL(None, use_errno=True)
  for kind in _ENTERED:
    if not _same(namespaces[kind], kind) and libc.setns(namespaces[kind], 0) != 0:
      error = ctypes.get_errno()
      raise OSError(error, f"cannot enter its {kind} namespace: {os.strerror(error)}")


def _wait(connection, task):
  """The task's exit code once it ended (negative: the signal that ended it; it stays a
  zombie until reaped); None where its client went first: the task is killed, and has
  ended."""
  ended = os.pidfd_open(task)
  watch = select.poll()
  watch.register(connection, select.POLLIN)
  watch.register(ended, select.POLLIN)
  client_gone = False
  while not client_gone:
    for fd, _ in watch.poll():
      if fd == ended:
        result = os.waitid(os.P_PID, task, os.WEXITED | os.WNOWAIT)
        return result.si_status if result.si_code == os.CLD_EXITED else -result.si_status
      try:
        client_gone = not connection.recv(1)  # It sends nothing more: this is its end.
      except ConnectionResetError:
        client_gone = True
  os.kill(task, signal.SIGKILL)
  os.waitid(os.P_PID, task, os.WEXITED | os.WNOWAIT)
  return None


def _become_task(request, streams):
  """In the task: takes the client's streams, directory, umask, CPUs, environment."""
  os.setsid()
  for target, fd in enumerate(streams):
    os.dup2(fd, target)
  os.chdir(request["cwd"])
  os.umask(request["umask"])
  os.sched_setaffinity(0, request["cpus"])
  os.environ.clear()
  os.environ.update(request["env"])
  tempfile.tempdir = None  # TMPDIR is the job's.
  for signum in (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGCHLD):
    signal.signal(signum, signal.SIG_DFL)
  signal.signal(signal.SIGINT, signal.default_int_handler)
  if "numpy" in sys.modules:  # Python reseeds `random` in a fork; numpy's global state too.
    sys.modules["numpy"].random.seed()


def run(argv, base_path):
  """Runs the command `argv` (`python PROGRAM...`) here, as the interpreter would at its
  top level."""
  program = argv[1:]
  sys.orig_argv = list(argv)
  sys.modules["__main__"] = main = types.ModuleType("__main__")
  main.__builtins__ = builtins
  if program[0] == "-m":
    directory, sys.argv = os.getcwd(), program[1:]
  else:
    path = program[0] if os.path.isabs(program[0]) else os.path.join(os.getcwd(), program[0])
    directory, sys.argv = os.path.dirname(os.path.realpath(path)), list(program)
  sys.path[:] = base_path if sys.flags.safe_path else [directory, *base_path]
  if program[0] == "-m":
    runpy._run_module_as_main(program[1])  # pylint: disable=protected-access
    return
  main.__dict__.update(__file__=path, __cached__=None, __spec__=None,
                       __loader__=importlib.machinery.SourceFileLoader("__main__", path))
  with open(path, "rb") as f:
    code = compile(f.read(), path, "exec", dont_inherit=True)
  exec(code, main.__dict__)  # pylint: disable=exec-used


if __name__ == "__main__":
  process_tree.die_with_parent()
  run(*serve(sys.argv[1]))
