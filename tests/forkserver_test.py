"""A sweep's fork server (jobs/forkserver, forkserver_process) runs a task as its command
would, with TensorFlow already imported: its argv, `__main__`, working directory,
environment, CPUs, exit status and the interpreter's end; the task counts among its
client's processes, dies with its client, and runs in a launcher's job namespaces, where
the launcher's preemption reaches it; what a fork would not run as its command starts as
its command. Real processes: the server, its clients, their programs, a launcher. (The
sweep's use of it: sweep_test's PBT population.)"""

import os
import signal
import subprocess
import sys
import time

import pytest

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.jobs import forkserver
from estimator_dist.jobs import forkserver_client
from estimator_dist.jobs import forkserver_process
from estimator_dist.jobs import process_tree
from estimator_dist.task import preemption
from tests import helpers

_PROGRAM = """
import os, sys, time
print("forked" if "tensorflow" in sys.modules else "cold", sys.argv, os.getcwd(),
      os.environ.get("TF_CONFIG"), sorted(os.sched_getaffinity(0)), flush=True)
print(__file__, sys.modules["__main__"].__dict__ is globals(), type(__builtins__).__name__,
      sys.orig_argv[1:], flush=True)
left_open = open("written_at_exit", "w")  # Flushed as the interpreter ends, not before.
left_open.write("all of it")
if "--wait" in sys.argv:
  time.sleep(60)
sys.exit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0)
"""


@pytest.fixture
def served(tmp_path):
  """(the environment of a local job's task, with the fork server's variables; its log),
  once the server listens."""
  env = helpers.child_env()
  with forkserver.started(str(tmp_path), env=env) as server:
    variables = server.variables()
    assert variables, (tmp_path / forkserver.LOG_NAME).read_text()
    yield {**forkserver.task_env(env), **variables}, tmp_path / forkserver.LOG_NAME


@pytest.fixture
def program(tmp_path):
  path = tmp_path / "program.py"
  path.write_text(_PROGRAM)
  return str(path)


def _client(command, env, cwd, **popen):
  return subprocess.Popen(
      [sys.executable, *forkserver.client_command(command, env)[1:]], env=env, cwd=cwd,
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def _task_of(client, env):
  """The task forked for `client`, once its handler recorded it (the task may run first)."""
  deadline = time.monotonic() + 30
  while not (tasks := forkserver.with_forked_tasks(
      {client.pid}, process_tree.process_table(),
      socket_path=env[env_vars.FORKSERVER]) - {client.pid}):
    assert time.monotonic() < deadline, f"no task recorded for client {client.pid}"
    time.sleep(0.05)
  (task,) = tasks
  return task


def _runs_forked(command, env, tmp_path, *, code, lines, **popen):
  """Runs `command` through a client: it ends with `code`, prints `lines`, and the file
  it left open was written whole at its exit."""
  client = _client(command, env, tmp_path, **popen)
  output, _ = client.communicate(timeout=60)
  assert client.returncode == code, output
  assert output.splitlines() == lines, output
  assert (tmp_path / "written_at_exit").read_text() == "all of it"
  (tmp_path / "written_at_exit").unlink()


@pytest.mark.processes
def test_a_task_runs_forked_as_its_command_would(served, program, tmp_path):
  served, _ = served
  cpus = {min(os.sched_getaffinity(0))}
  _runs_forked([sys.executable, program, "--flag=1", "3"], {**served, "TF_CONFIG": "{}"},
               tmp_path, code=3, lines=[
                   f"forked ['{program}', '--flag=1', '3'] {tmp_path} {{}} {sorted(cpus)}",
                   f"{program} True module ['{program}', '--flag=1', '3']"],
               preexec_fn=lambda: os.sched_setaffinity(0, cpus))
  # python -m finds the module in the working directory, and runs it as its __main__.
  _runs_forked([sys.executable, "-m", "program", "x"], served, tmp_path, code=0, lines=[
      f"forked ['{program}', 'x'] {tmp_path} None {sorted(os.sched_getaffinity(0))}",
      f"{program} True module ['-m', 'program', 'x']"])



@pytest.mark.processes
def test_a_task_counts_among_its_clients_processes_and_dies_with_it(served, program, tmp_path):
  served, _ = served
  client = _client([sys.executable, program, "--wait"], served, tmp_path)
  assert client.stdout.readline().startswith("forked")
  task = _task_of(client, served)
  client.send_signal(signal.SIGTERM)  # A preemption's: the launcher signals the task too.
  time.sleep(0.5)
  assert client.poll() is None and process_tree.alive([task])
  os.kill(task, signal.SIGTERM)
  client.communicate(timeout=60)
  assert client.returncode == -signal.SIGTERM  # It ends as the task ended.
  client = _client([sys.executable, program, "--wait"], served, tmp_path)
  assert client.stdout.readline().startswith("forked")
  os.kill(_task_of(client, served), signal.SIGKILL)  # The OOM killer's, say.
  output, _ = client.communicate(timeout=60)
  assert client.returncode == -signal.SIGKILL and "Traceback" not in output, output
  client = _client([sys.executable, program, "--wait"], served, tmp_path)
  assert client.stdout.readline().startswith("forked")
  task = _task_of(client, served)
  client.kill()
  client.communicate(timeout=60)
  deadline = time.monotonic() + 30
  while process_tree.alive([task]):
    assert time.monotonic() < deadline, f"task {task} outlived its client"
    time.sleep(0.1)


@pytest.mark.processes
def test_a_launchers_task_is_forked_into_the_jobs_namespaces_and_preempted_there(
    served, tmp_path):
  served, _ = served
  program = tmp_path / "preempted.py"
  program.write_text(
      "import os, signal, sys, time\n"
      "from estimator_dist import errors\n"  # Ours: the launcher does not instrument it.
      "print('forked' if 'tensorflow' in sys.modules else 'cold',\n"
      "      os.readlink('/proc/self/ns/net'), os.readlink('/proc/self/ns/pid'), flush=True)\n"
      "signal.signal(signal.SIGUSR1, lambda *_: (print('saved', flush=True),\n"
      "                                          sys.exit(errors.PREEMPTED_EXIT_CODE)))\n"
      "time.sleep(120)\n")
  launcher = subprocess.Popen(
      helpers.launch_command("--strategy=local", "--num_workers=1",
                             f"--model_dir={tmp_path / 'model'}",
                             program=(sys.executable, str(program))),
      env=served, cwd=helpers.REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
      text=True, start_new_session=True)
  lines = []
  while not any(line.startswith("[chief:0] ") for line in lines):
    lines.append(launcher.stdout.readline())
    assert lines[-1], "".join(lines)
  started, net, pid = lines[-1].split()[1:]
  here = [os.readlink(f"/proc/self/ns/{kind}") for kind in ("net", "pid")]
  assert started == "forked" and net != here[0] and pid != here[1], (lines[-1], here)
  deadline = time.monotonic() + 30
  while not process_tree.catches(launcher.pid, signal.SIGUSR1):
    assert time.monotonic() < deadline
    time.sleep(0.05)
  launcher.send_signal(signal.SIGUSR1)  # Preempted: the launcher asks the task to save.
  output, _ = launcher.communicate(timeout=60)
  assert launcher.returncode == errors.PREEMPTED_EXIT_CODE, "".join(lines) + output
  assert "[chief:0] saved" in output, output


@pytest.mark.processes
def test_a_task_a_fork_would_not_run_as_its_command_runs_as_its_command(
    served, program, tmp_path):
  served, _ = served
  for changed, said in [
      ({"TF_CPP_MIN_LOG_LEVEL": "3"}, "its TF_CPP_MIN_LOG_LEVEL differs from the fork server's"),
      ({env_vars.FORKSERVER: str(tmp_path / "gone")}, "No such file or directory")]:
    client = _client([sys.executable, program], {**served, **changed}, tmp_path)
    output, _ = client.communicate(timeout=120)
    assert client.returncode == 0, output
    lines = output.splitlines()
    assert said in lines[0] and lines[1].startswith("cold"), output


def test_only_this_interpreter_running_a_python_program_goes_through_it():
  served = {env_vars.FORKSERVER: "/tmp/socket", "PATH": os.environ["PATH"]}
  assert forkserver.client_command(["/bin/echo", "x"], served) == ["/bin/echo", "x"]
  assert forkserver.client_command([sys.executable, "x.py"], {}) == [sys.executable, "x.py"]
  assert forkserver.client_command([sys.executable, "x.py"], served) == [
      sys.executable, "-I", "-S", forkserver.CLIENT, "/tmp/socket",
      command_line.line(""), sys.executable, "x.py"]
  # The client imports nothing of estimator_dist: its copies of these stay the same.
  assert forkserver_client.PREEMPTION == preemption.SIGNALS
  assert forkserver_client.NAMESPACES == (
      forkserver_process._ENTERED + forkserver_process._SAME)  # pylint: disable=protected-access
