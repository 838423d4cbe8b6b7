"""The suite's own check of what a test leaves behind (leftovers, conftest): it sees a
leftover, and not what is in use."""

import os
import signal
import subprocess
import tempfile

from tests import helpers
from tests import leftovers

# Makes a semaphore as horovodrun does (a spawn context: its resource tracker, a child,
# removes it when this process ends), says its name, and waits.
MAKER = """
import multiprocessing, sys
lock = multiprocessing.get_context("spawn").Lock()
print(lock._semlock.name, flush=True)
sys.stdin.read()
"""


def test_the_processes_of_the_suite_keep_their_temporary_files_in_its_own_directory():
  own = tempfile.gettempdir()
  assert os.path.basename(own).startswith("estimator_dist_tests_"), own
  code, output = helpers.run([helpers.PYTHON, "-c",
                              "import tempfile; print(tempfile.gettempdir())"])
  assert (code, output.strip()) == (0, own)


def test_a_semaphore_whose_maker_and_tracker_were_killed_is_left_and_one_in_use_is_not():
  before = leftovers.names("/dev/shm")
  maker = subprocess.Popen([helpers.PYTHON, "-c", MAKER], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True, env=helpers.child_env(),
                           start_new_session=True)
  path = "/dev/shm/sem." + maker.stdout.readline().strip().lstrip("/")
  try:
    assert os.path.exists(path) and leftovers.orphans_left(before) == []  # In use.
    os.killpg(maker.pid, signal.SIGKILL)  # The tracker too, as a stopped task's.
    maker.wait()
    assert leftovers.orphans_left(before) == [os.path.basename(path)]
  finally:
    if maker.poll() is None:
      os.killpg(maker.pid, signal.SIGKILL)
    if os.path.exists(path):
      os.remove(path)


def test_a_launchers_directory_is_left_and_a_model_dir_it_made_is_not(tmp_path):
  before = leftovers.names(tmp_path)
  for kind in ("heartbeats", "model"):
    (tmp_path / f"estimator_dist_123-456_{kind}_abcd").mkdir()
  assert leftovers.launcher_dirs_left(tmp_path, before) == [
      "estimator_dist_123-456_heartbeats_abcd"]
