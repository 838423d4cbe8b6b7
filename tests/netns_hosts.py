"""Test hosts: network namespaces joined by a veth pair, each with its own address on a
private link (root only). Processes run on a host with `ip netns exec`; the namespaces
(and with them the link) are deleted, and their processes killed, when the test ends."""

import contextlib
import dataclasses
import os
import random
import shutil
import signal
import subprocess
import uuid

import pytest


@dataclasses.dataclass(frozen=True)
class Host:
  namespace: str
  address: str
  interface: str

  def command(self, *args):
    """`args` run on this host."""
    return ["ip", "netns", "exec", self.namespace, *args]


def _ip(*args):
  done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
  if done.returncode != 0:
    raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
  return done.stdout


def _remove(namespace):
  with contextlib.suppress(RuntimeError):
    for pid in _ip("netns", "pids", namespace).split():
      with contextlib.suppress(ProcessLookupError):
        os.kill(int(pid), signal.SIGKILL)
  with contextlib.suppress(RuntimeError):
    _ip("netns", "delete", namespace)


@contextlib.contextmanager
def two_hosts():
  """Yields two `Host`s, 10.X.Y.1 and 10.X.Y.2 on a /24 of their own."""
  if os.geteuid() != 0 or not shutil.which("ip"):
    pytest.skip("test hosts are network namespaces: they need root and iproute2's ip")
  tag = uuid.uuid4().hex[:6]
  subnet = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}"
  hosts = [Host(f"ed{tag}{n}", f"{subnet}.{n}", f"ed{tag}v{n}") for n in (1, 2)]
  try:
    try:
      for host in hosts:
        _ip("netns", "add", host.namespace)
      _ip("link", "add", hosts[0].interface, "type", "veth", "peer", "name", hosts[1].interface)
    except RuntimeError as e:
      pytest.skip(f"cannot make test hosts here: {e}")
    for host in hosts:
      _ip("link", "set", host.interface, "netns", host.namespace)
      _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", host.interface)
      _ip("-n", host.namespace, "link", "set", host.interface, "up")
      _ip("-n", host.namespace, "link", "set", "lo", "up")
    yield hosts
  finally:
    for host in hosts:
      _remove(host.namespace)
    with contextlib.suppress(RuntimeError):  # Left here only if it never moved.
      _ip("link", "delete", hosts[0].interface)
