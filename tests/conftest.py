"""The suite's fixtures: no test leaves a process it started."""

import os
import time

import psutil
import pytest

from estimator_dist.task import env_vars
from tests import helpers

# A task started in this process (training tests run the strategies here) must not
# start pytest again to bind its own address; the processes a test starts may
# (helpers.child_env leaves this out).
os.environ[env_vars.NO_RESTART] = "1"


@pytest.fixture(autouse=True)
def no_process_left_behind():
  """Fails a test that leaves any process it started running, orphaned or not."""
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
