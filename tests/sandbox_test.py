"""The namespaces of a local job, made alone: their first process brings loopback up.

The jobs that run in them are in trust_test and launch_test.
"""

import subprocess
import sys

import pytest

from estimator_dist.supervision import namespace_holder
from estimator_dist.supervision import sandbox


@pytest.mark.processes
def test_the_namespaces_first_process_brings_their_loopback_up():
  box, _ = sandbox.open_sandbox("private")  # As trust_test, where namespaces can be made.
  try:
    with open(f"/proc/{box.init_pid}/cmdline") as f:
      assert f.read().split("\0")[-4:-1] == ["-I", "-S", namespace_holder.__file__]
    inside = subprocess.run(box.command([sys.executable, "-c", (
        "import socket\n"
        "s = socket.create_server(('127.0.0.1', 0))\n"
        "socket.create_connection(s.getsockname()).close()\n"
        "print(sorted(line.split(':')[0].strip() for line in open('/proc/net/dev')"
        ".readlines()[2:]))")]), capture_output=True, text=True, timeout=60, check=False)
    assert (inside.returncode, inside.stdout) == (0, "['lo']\n"), inside.stderr
  finally:
    box.close()
