"""The watchdog's companion as a program of its own.

The jobs that exercise it whole are in trust_test; here it runs alone, under a shell
standing in for the task it watches (it kills its parent).
"""

import os
import socket
import subprocess
import sys
import time

import psutil
import pytest

from estimator_dist import command_line
from estimator_dist.contract import process_identity
from estimator_dist.task import watchdog_companion


def _closed_port():
  """A port nothing listens on (bound, so no one else takes it while the test runs)."""
  s = socket.socket()
  s.bind(("127.0.0.1", 0))
  return s, f"127.0.0.1:{s.getsockname()[1]}"


def test_the_startup_message_names_the_peers_that_do_not_answer():
  bound, silent = _closed_port()
  with bound, socket.socket() as listening:
    listening.bind(("127.0.0.1", 0))
    listening.listen(1)
    answering = f"127.0.0.1:{listening.getsockname()[1]}"
    message = watchdog_companion.startup_timeout_message(
        task="chief:0", phase="started", waited=7.4, timeout=6,
        peers=[["worker:0", silent], ["worker:1", answering]])
    assert message == (
        f"chief:0 has waited 7 s in phase 'started' for worker:0 at {silent} (no answer); it "
        f"did not start training within the startup timeout of 6 s "
        f"(ESTIMATOR_DIST_STARTUP_TIMEOUT_SECS; launcher: --startup_timeout_secs). Check "
        f"that every task of the cluster runs and can reach the others.")
    every = watchdog_companion.startup_timeout_message(
        task="worker:1", phase="cluster reached", waited=9, timeout=8.5,
        peers=[["worker:1", answering]])
    assert "in phase 'cluster reached' although every peer answers (one of them may be " \
           "stuck); it did not start training within the startup timeout of 8.5 s" in every
  alone = watchdog_companion.startup_timeout_message(task="chief:0", phase="started",
                                                     waited=3, timeout=2, peers=[])
  assert "in phase 'started' with no peer;" in alone


def test_an_address_that_is_not_one_does_not_answer():
  assert not watchdog_companion.answers("no port")
  assert not watchdog_companion.answers("[::1]:x")


def test_the_launcher_identity_is_what_the_lifeline_checks():
  assert not watchdog_companion._launcher_is_gone(process_identity.launcher_identity())  # pylint: disable=protected-access
  pid = os.getpid()
  assert watchdog_companion._launcher_is_gone(f"{pid}:0")  # pylint: disable=protected-access
  # Above the kernel's largest pid_max: no such process.
  assert process_identity.launcher_identity(2 ** 22 + 1) == f"{2 ** 22 + 1}:None"


def _companion_under_a_shell(*args, prefix=()):
  """The companion run as `watchdog.start` runs it, whose parent is a shell that exits 3
  after it, unless the companion kills it first."""
  return subprocess.Popen(
      [*prefix, "sh", "-c", '"$@"; exit 3', "sh", sys.executable, "-S",
       watchdog_companion.__file__, *args, command_line.error_line("")],
      stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _killed(task):
  """What the companion said before it ended `task` (its stdin stays open: the task
  goes on)."""
  task.wait(timeout=30)
  with task.stdin, task.stderr:
    return task.stderr.read()


@pytest.mark.processes
def test_the_companion_kills_a_task_that_does_not_train_in_time():
  bound, silent = _closed_port()
  with bound:
    task = _companion_under_a_shell("chief:0", "1", "", "", f'[["worker:0", "{silent}"]]')
    stderr = _killed(task)
  assert task.returncode == -9, stderr
  assert stderr.startswith(
      f"estimator-dist: error: chief:0 has waited 1 s in phase 'started' for worker:0 at "
      f"{silent} (no answer); it did not start training within the startup timeout of 1 s"
  ), stderr


@pytest.mark.processes
def test_the_companion_kills_a_task_whose_launcher_is_gone():
  pid = os.getpid()
  task = _companion_under_a_shell("worker:1", "0", f"{pid}:0", "", "[]")
  stderr = _killed(task)
  assert task.returncode == -9, stderr
  assert stderr == (f"estimator-dist: error: worker:1: its launcher (pid {pid}) is gone; the "
                    f"task ends with it\n")


@pytest.mark.processes
def test_the_companion_beats_and_ends_with_the_task(tmp_path):
  beat = tmp_path / "heartbeat"
  task = _companion_under_a_shell("evaluator:0", "0", process_identity.launcher_identity(),
                                  str(beat), "[]")
  deadline = time.monotonic() + 10
  while not beat.exists() and time.monotonic() < deadline:
    time.sleep(0.1)
  assert beat.exists() and task.poll() is None
  task.stdin.write("session created\n")
  task.stdin.flush()
  _, stderr = task.communicate(timeout=30)  # Closes stdin: the task ended.
  assert (task.returncode, stderr) == (3, "")
  # Before its training ended: said beside the heartbeat, for the launcher.
  assert (tmp_path / "heartbeat.exited").exists()


@pytest.mark.processes
def test_a_later_round_is_watched_from_its_start_as_the_first_was(tmp_path):
  """A program's next train(): once its first round trained, nothing beat or bounded the
  next round's start (its session, restore, input warm-up) until its first step."""
  beat = tmp_path / "heartbeat"
  task = _companion_under_a_shell("chief:0", "1", "", str(beat), "[]")
  task.stdin.write("training\n")
  task.stdin.flush()
  time.sleep(1.5)  # Past the startup timeout: training is the heartbeat hook's.
  assert task.poll() is None
  beat.unlink(missing_ok=True)
  task.stdin.write(f"{watchdog_companion.NEW_ROUND}\n")
  task.stdin.flush()
  stderr = _killed(task)
  assert task.returncode == -9 and beat.exists(), stderr  # It beat again, then ended it.
  assert stderr.startswith("estimator-dist: error: chief:0 has waited 1 s in phase "
                           "'cluster reached' with no peer"), stderr


@pytest.mark.processes
def test_a_task_that_ended_its_training_is_not_said_to_end_early(tmp_path):
  beat = tmp_path / "heartbeat"
  (tmp_path / "heartbeat.ended").touch()
  task = _companion_under_a_shell("worker:1", "0", "", str(beat), "[]")
  _, stderr = task.communicate(timeout=30)
  assert (task.returncode, stderr) == (3, "")
  assert not (tmp_path / "heartbeat.exited").exists()


@pytest.mark.processes
def test_a_stopped_task_in_its_own_pid_namespace_stops_beating(tmp_path):
  """A local job's sandbox: the task has another pid in the host's /proc, which the
  companion reads; stopped (SIGSTOP), the task must look stuck to the launcher."""
  beat = tmp_path / "heartbeat"
  user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
  task = _companion_under_a_shell("worker:0", "0", process_identity.launcher_identity(),
                                  str(beat), "[]", prefix=["unshare", *user, "--pid", "--fork"])
  deadline = time.monotonic() + 10
  while not beat.exists() and time.monotonic() < deadline:
    time.sleep(0.1)
  assert beat.exists() and task.poll() is None
  shell = psutil.Process(task.pid).children()[0]  # Under unshare: the namespace's pid 1.
  shell.suspend()
  time.sleep(0.6)  # A beat under way ends.
  stopped_at = beat.stat().st_mtime
  time.sleep(1.5)  # Three of the companion's looks.
  assert beat.stat().st_mtime == stopped_at
  shell.resume()
  _, stderr = task.communicate(timeout=30)
  assert (task.returncode, stderr) == (3, "")
