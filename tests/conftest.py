"""The suite's fixtures: no test leaves a process it started."""

import time

import psutil
import pytest

from tests import helpers


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
