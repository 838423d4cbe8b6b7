"""Helpers of the tests that start real processes."""

import contextlib
import json
import mmap
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import psutil
import pytest

from estimator_dist.contract import cluster
from estimator_dist.contract import env_vars
from estimator_dist.jobs import model_dir_arg
from estimator_dist.supervision import job_dirs
from estimator_dist.supervision import process_tree

PYTHON = sys.executable
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Every process a test starts inherits this variable, so a survivor is found even
# after it has been orphaned and adopted by init.
TOKEN_VAR = "ESTIMATOR_DIST_TEST_PROCESS"
TOKEN = uuid.uuid4().hex

# Where a hang line says a task's beats stopped (heartbeat.last_steps), a regex.
LAST_BEAT = r"(at step \d+ of \d+|before its first step)"

def child_env(**extra):
  env = dict(os.environ)
  env.pop("TF_CONFIG", None)
  env.pop(env_vars.NO_RESTART, None)  # conftest's, for the suite's own process only.
  env["PYTHONWARNINGS"] = "ignore"
  env["TF_CPP_MIN_LOG_LEVEL"] = "1"
  env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
  env[TOKEN_VAR] = TOKEN
  env.update(extra)
  return env


def run(command, timeout=300, env=None, cwd=REPO):
  """Runs `command` in its own process group, in `cwd`; returns (exit code, output).

  On timeout the whole group is killed and the test fails with the output so far.
  """
  process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env or child_env(), cwd=cwd,
                             start_new_session=True, text=True)
  try:
    output, _ = process.communicate(timeout=timeout)
  except subprocess.TimeoutExpired:
    stop(process)
    output, _ = process.communicate()
    pytest.fail(f"{command} did not finish within {timeout}s; output:\n{output[-5000:]}")
  return process.returncode, output


def stop(process, secs=10):
  """Stops `process` (the first of its process group) as Ctrl-C does, so that a launcher
  removes what its job made; then, or `secs` later, SIGKILL to all its group."""
  process.send_signal(signal.SIGINT)
  try:
    process.wait(secs)
  except subprocess.TimeoutExpired:
    pass
  with contextlib.suppress(ProcessLookupError):
    os.killpg(process.pid, signal.SIGKILL)
  process.wait()


def chief_at(host="127.0.0.1", port=2222, source="TF_CONFIG"):
  """The chief of a chief-and-worker cluster, at host:port, as `source` described it."""
  return cluster.task_in({"chief": [f"{host}:{port}"], "worker": ["127.0.0.1:2223"]}, "chief",
                         0, source=source)


def consecutive_free_ports(count):
  """The first of `count` consecutive ports free on 127.0.0.1 now."""
  for _ in range(50):
    with socket.socket() as probe:
      probe.bind(("127.0.0.1", 0))
      base = probe.getsockname()[1]
    sockets = []
    try:
      for port in range(base, base + count):
        sockets.append(socket.socket())
        sockets[-1].bind(("127.0.0.1", port))
      return base
    except OSError:
      continue
    finally:
      for s in sockets:
        s.close()
  raise RuntimeError("no consecutive free ports")


def wait_until_gone(find, timeout=30):
  """Polls `find()` (processes) until it finds none; the command lines of those left."""
  deadline = time.monotonic() + timeout
  while (left := find()) and time.monotonic() < deadline:
    time.sleep(0.2)
  return [" ".join(p.cmdline())[:200] for p in left]


def launch_command(*launch_args, program=(PYTHON, "-m", "tests.programs.plain_model")):
  """The one command line of a launcher run: `python -m estimator_dist.launch ARGS --
  PROGRAM` (a command: a Python module is `(PYTHON, "-m", module, args...)`). The job
  draws no curves.png (half a second a job) unless ARGS say --curves, and its terminal
  shows every line of its tasks (--terminal=all: the tests read TensorFlow's own lines
  too) unless ARGS say another --terminal; README's commands run with the default."""
  curves = [] if "--curves" in launch_args else ["--nocurves"]
  terminal = [] if any(a.startswith("--terminal") for a in launch_args) else [
      "--terminal=all"]
  return [PYTHON, "-m", "estimator_dist.launch", *curves, *terminal, *launch_args, "--",
          *program]


def launch(strategy, program, *args, num_workers=2, launch_args=(), timeout=300):
  """Runs `program` (a module) through the launcher; returns (exit code, output)."""
  return run(launch_command(f"--strategy={strategy}", f"--num_workers={num_workers}",
                            *launch_args, program=(PYTHON, "-m", program, *args)),
             timeout=timeout)


def task_logs(model_dir):
  """Every line the tasks of the launches into `model_dir` wrote, as each task's log in
  it keeps them (the terminal leaves out TensorFlow's INFO lines by default)."""
  directory = os.path.join(model_dir, "estimator_dist", "logs")
  text = []
  for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
    with open(os.path.join(directory, name), errors="replace") as f:
      text.append(f.read())
  return "".join(text)


def summaries(output):
  from estimator_dist.contract import summary  # pylint: disable=g-import-not-at-top
  return [fields for fields in map(summary.parse_line, output.splitlines()) if fields]


def check_premade_trained_together(output, strategy="multi_worker"):
  """TensorFlow's premade-Estimator tutorial (tests/programs/upstream), unmodified, trained
  by two tasks of `strategy` as one job: both instrumented, the chief's accuracy printed
  by both, one summary of its 5000 steps."""
  assert output.count("estimator-dist: instrumented premade_estimator.py: its Estimators "
                      f"train, evaluate and export under the job's {strategy}") == 2, (
                          output[-5000:])
  accuracies = re.findall(r"Test set accuracy: (\S+)", output)
  assert len(accuracies) == 2 and len(set(accuracies)) == 1, accuracies  # The chief's.
  found, = summaries(output)
  assert found["steps"] == "5000" and float(found["eval_accuracy"]) > 0.8, found


def our_processes():
  found = []
  for p in psutil.process_iter():
    try:
      if p.pid != os.getpid() and p.status() != psutil.STATUS_ZOMBIE and (
          p.environ().get(TOKEN_VAR) == TOKEN):
        found.append(p)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
      pass
  return found


def cli(command, *args):
  """The output of `estimator-dist COMMAND args...`, run as a process; fails on an error."""
  code, output = run([PYTHON, "-m", "estimator_dist.cli", command, *args], timeout=60)
  assert code == 0, output
  return output


class Job:
  """A launcher run whose output is read as it comes, each line with its time."""

  def __init__(self, *launch_args, program="tests.programs.plain_model", program_args=(),
               command=None, env=None):
    self.lines, self._held = [], []
    command = command or launch_command(*launch_args,
                                        program=(PYTHON, "-m", program, *program_args))
    self.process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
        env=env or child_env(), start_new_session=True)
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()

  def _read(self):
    for line in self.process.stdout:
      self.lines.append((time.monotonic(), line.rstrip("\n")))

  def wait(self, timeout):
    try:
      self.process.wait(timeout)
    except subprocess.TimeoutExpired:
      stop(self.process)
      pytest.fail(f"the job did not end within {timeout}s:\n{self.output[-5000:]}")
    finally:
      self._reader.join(10)
    return self.process.returncode

  @property
  def output(self):
    return "\n".join(line for _, line in self.lines)

  def first(self, text):
    """(time, line) of the first line containing `text`."""
    return next(((t, line) for t, line in self.lines if text in line), (None, None))

  def shared_memory(self):
    """The files of /dev/shm that the job's processes map now (process_tree)."""
    with contextlib.suppress(psutil.Error):
      launcher = psutil.Process(self.process.pid)
      return process_tree.shared_memory_files(
          {launcher.pid, *(p.pid for p in launcher.children(recursive=True))})
    return set()

  def held_shared_memory(self):
    """`shared_memory()`, each of its multiprocessing files also mapped by this process
    until `kill` removes them. A test that kills the job's processes itself leaves them
    unmapped for seconds, while the processes end; the suite's other process, looking for
    files left behind meanwhile (conftest), must not take them for its test's."""
    mapped = self.shared_memory()
    for name in os.listdir(job_dirs.SHARED_MEMORY) if job_dirs.shared_memory() else ():
      path = os.path.join(job_dirs.SHARED_MEMORY, name)
      try:
        if job_dirs.MULTIPROCESSING_FILE.match(name) and job_dirs.file_id(path) in mapped:
          with open(path, "rb") as f:
            self._held.append(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
      except (OSError, ValueError):
        pass  # Removed meanwhile, or empty.
    return mapped

  def kill(self, mapped=None):
    """SIGKILL to the launcher's process group, as a test that ends early does; then what
    the killed launcher leaves goes, as the next launch and a stop would remove it: its
    directories, and the multiprocessing files its processes mapped (`mapped`, read
    before a kill of the test's own; else now)."""
    if self.process.poll() is None:
      mapped = mapped or self.shared_memory()
      os.killpg(self.process.pid, signal.SIGKILL)
      self.process.wait()
    job_dirs.remove_multiprocessing_files(mapped or set())
    for held in self._held:
      held.close()
    self._held.clear()
    job_dirs.remove_left_behind(lambda _: None, keep=model_dir_arg.has_checkpoint)


def listening(process):
  """{(address, port)} of the TCP sockets `process` (psutil) listens on; empty once gone."""
  try:
    return {(c.laddr.ip, c.laddr.port) for c in process.net_connections("inet")
            if c.status == psutil.CONN_LISTEN}
  except psutil.Error:
    return set()


class Sampler(threading.Thread):
  """Calls `sample()` every 0.3 s in a thread while its `with` block runs (a job's
  sockets, read as they come and go)."""

  def __init__(self):
    super().__init__(daemon=True)
    self.done, self.error = threading.Event(), None

  def sample(self):
    raise NotImplementedError

  def run(self):
    try:
      while not self.done.wait(0.3):
        self.sample()
    except Exception as e:  # pylint: disable=broad-except
      self.error = e  # Raised in the test's thread on leaving the block.

  def __enter__(self):
    self.start()
    return self

  def __exit__(self, *_):
    self.done.set()
    self.join()
    if self.error:
      raise self.error


def chrome_trace(path):
  """The events of a Chrome trace file as Horovod writes its timeline: a JSON array whose
  closing bracket may be missing (it is written as the events come)."""
  with open(path) as f:
    text = f.read().rstrip().rstrip(",")
  return json.loads(text if text.endswith("]") else text + "]")


def script_module(name):
  """scripts/NAME.py of the repository, loaded as a module (the scripts are no package)."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "scripts", f"{name}.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module
