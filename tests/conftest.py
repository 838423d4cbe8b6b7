"""The suite's fixtures: no test leaves a process it started, nor files that nothing
will remove (leftovers)."""

import os
import time

import psutil
import pytest

from estimator_dist.contract import env_vars
from estimator_dist.supervision import job_dirs
from tests import helpers
from tests import leftovers

# A task started in this process (training tests run the strategies here) must not
# start pytest again to bind its own address; the processes a test starts may
# (helpers.child_env leaves this out).
os.environ[env_vars.NO_RESTART] = "1"


_REPORT = []  # What the whole session left, said at its end (pytest_terminal_summary).


@pytest.fixture(scope="session", autouse=True)
def own_temporary_directory(tmp_path_factory):
  """The suite's temporary directory (TMPDIR, also of the processes it starts), so that
  what is left there is the suite's; removed at the end, what was left in it said.

  pytest's own tmp_path directories stay where pytest keeps them.
  """
  tmp_path_factory.getbasetemp()
  previous, shared = os.environ.get("TMPDIR"), leftovers.names(job_dirs.SHARED_MEMORY)
  path = leftovers.use_own_temporary_directory()
  yield path
  _REPORT.extend(f"{path}/{name}" for name in leftovers.remove_temporary_directory(path, previous))
  _REPORT.extend(f"{job_dirs.SHARED_MEMORY}/{name} (made during the session, mapped by none)"
                 for name in leftovers.orphans_left(shared))


def pytest_terminal_summary(terminalreporter):
  if _REPORT:
    terminalreporter.write_sep("=", "left by the suite (the temporary directory is removed)")
    terminalreporter.write_line("\n".join(_REPORT))


@pytest.fixture(autouse=True)
def no_file_left_behind(own_temporary_directory):
  """Fails a test that leaves a launcher's directory in the suite's temporary directory,
  or in /dev/shm a semaphore or shared memory that nothing will remove (leftovers)."""
  temporary = leftovers.names(own_temporary_directory)
  shared = leftovers.names(job_dirs.SHARED_MEMORY)
  yield
  left = ([f"{own_temporary_directory}/{name}"
           for name in leftovers.launcher_dirs_left(own_temporary_directory, temporary)] +
          [f"{job_dirs.SHARED_MEMORY}/{name}" for name in leftovers.orphans_left(shared)])
  assert not left, f"left behind: {left}"


@pytest.fixture(autouse=True)
def no_process_left_behind(no_file_left_behind):  # pylint: disable=unused-argument
  """Fails a test that leaves any process it started running, orphaned or not. Its end
  comes first: no_file_left_behind looks once the processes are gone."""
  yield
  deadline = time.monotonic() + 10
  while (left := helpers.our_processes()) and time.monotonic() < deadline:
    time.sleep(0.2)
  names = []
  for p in left:
    try:
      names.append(" ".join(p.cmdline())[:200])
      p.kill()
    except psutil.NoSuchProcess:
      pass
  assert not names, f"processes left behind: {names}"
