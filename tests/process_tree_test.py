"""supervision/process_tree as the launcher reads it (psutil): a task's family, a stopped process,
a zombie; and the CPU time of a family that reaped a child, as a task's watchdog companion
reads it (/proc) after its training."""

import signal
import subprocess
import sys
import time

import pytest

from estimator_dist.supervision import process_tree
from estimator_dist.task import watchdog_companion

# A parent that starts a child, reaps it after it burned CPU, then sleeps: its CPU time
# must count the child's.
_PARENT = """
import subprocess, sys, time
subprocess.run([sys.executable, "-c", "t = __import__('time').process_time()\\n"
                "while __import__('time').process_time() - t < 0.3: pass"], check=True)
grandchild = subprocess.Popen(["sleep", "60"])
print(grandchild.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.processes
def test_a_family_its_stop_its_zombie_and_its_cpu_time():
  parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
  grandchild = None
  try:
    grandchild = int(parent.stdout.readline())
    table = process_tree.process_table()
    assert table[grandchild][0] == parent.pid
    assert process_tree.descendants(parent.pid, table) == [grandchild]
    assert not process_tree.stopped(table[parent.pid][1])
    # The reaped child's CPU time counts in its parent's.
    assert watchdog_companion.family_cpu_secs(parent.pid, skip="") >= 0.3
    assert watchdog_companion.family_cpu_secs(parent.pid, skip=str(parent.pid)) == 0
    parent.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while not process_tree.stopped(process_tree.process_table()[parent.pid][1]):
      assert time.monotonic() < deadline
      time.sleep(0.05)
    parent.send_signal(signal.SIGCONT)
    assert process_tree.alive([parent.pid, grandchild]) == [parent.pid, grandchild]
  finally:
    parent.kill()
    parent.stdout.close()
    if grandchild:
      subprocess.run(["kill", "-9", str(grandchild)], check=False)
  # Killed, not yet waited for: a zombie, which is not alive; waited for: gone.
  deadline = time.monotonic() + 10
  while process_tree.alive([parent.pid]):
    assert time.monotonic() < deadline
    time.sleep(0.05)
  parent.wait()
  assert process_tree.alive([parent.pid]) == [] == process_tree.descendants(parent.pid)
