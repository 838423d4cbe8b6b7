"""Test hosts: network namespaces joined by a veth pair, each with its own address on a
private link (root only). Processes run on a host with `ip netns exec`; the namespaces
(and with them the link) are deleted, and their processes killed, when the test ends.
`ssh_servers` starts an SSH server on each host, as a cluster's machines have."""

import contextlib
import dataclasses
import os
import random
import shutil
import signal
import subprocess
import time
import uuid

import pytest

# The name of the private link's interface on every host (horovodrun needs one name).
INTERFACE = "edlink0"
SSH_PORT = 2022


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


def stop_processes(host, keep=("sshd",)):
  """Kills every process on `host` but those named in `keep` (what a test left there)."""
  with contextlib.suppress(RuntimeError):
    for pid in _ip("netns", "pids", host.namespace).split():
      with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/comm") as f:
          if f.read().strip() not in keep:
            os.kill(int(pid), signal.SIGKILL)


def _remove(namespace):
  with contextlib.suppress(RuntimeError):
    for pid in _ip("netns", "pids", namespace).split():
      with contextlib.suppress(ProcessLookupError):
        os.kill(int(pid), signal.SIGKILL)
  with contextlib.suppress(RuntimeError):
    _ip("netns", "delete", namespace)


@contextlib.contextmanager
def two_hosts():
  """Yields two `Host`s, 10.X.Y.1 and 10.X.Y.2 on a /24 of their own, each reaching the
  other through its interface `INTERFACE`."""
  if os.geteuid() != 0 or not shutil.which("ip"):
    pytest.skip("test hosts are network namespaces: they need root and iproute2's ip")
  tag = uuid.uuid4().hex[:6]
  subnet = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}"
  hosts = [Host(f"ed{tag}{n}", f"{subnet}.{n}", INTERFACE) for n in (1, 2)]
  made_link = f"ed{tag}v1", f"ed{tag}v2"  # Unique on this machine until they move.
  try:
    try:
      for host in hosts:
        _ip("netns", "add", host.namespace)
      _ip("link", "add", made_link[0], "type", "veth", "peer", "name", made_link[1])
    except RuntimeError as e:
      pytest.skip(f"cannot make test hosts here: {e}")
    for host, end in zip(hosts, made_link):
      _ip("link", "set", end, "netns", host.namespace)
      _ip("-n", host.namespace, "link", "set", end, "name", host.interface)
      _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", host.interface)
      _ip("-n", host.namespace, "link", "set", host.interface, "up")
      _ip("-n", host.namespace, "link", "set", "lo", "up")
    yield hosts
  finally:
    for host in hosts:
      _remove(host.namespace)
    with contextlib.suppress(RuntimeError):  # Left here only if it never moved.
      _ip("link", "delete", made_link[0])


@dataclasses.dataclass(frozen=True)
class SshClient:
  """How the test's processes reach the hosts' SSH servers, as a user's ~/.ssh would."""
  identity: str
  bin_dir: str  # An `ssh` that checks the hosts' keys against the test's known_hosts.

  def env(self, env):
    return {**env, "PATH": f"{self.bin_dir}:{env.get('PATH', os.defpath)}"}

  @property
  def horovodrun_args(self):
    return f"--ssh-port={SSH_PORT} --ssh-identity-file={self.identity}"


@contextlib.contextmanager
def ssh_servers(hosts, directory):
  """Starts Debian's sshd on each host (port SSH_PORT; a host key and one authorized user
  key, made here in `directory`); yields an `SshClient`. The servers are stopped here
  (and die with the hosts' namespaces)."""
  sshd = shutil.which("sshd") or "/usr/sbin/sshd"
  if not os.path.exists(sshd) or not shutil.which("ssh"):
    pytest.skip("the tests across hosts over SSH need openssh-server and openssh-client "
                "(make setup installs them as root)")
  os.makedirs(directory, exist_ok=True)
  keys = {}
  for name in ("host", "user"):
    keys[name] = os.path.join(directory, f"{name}_key")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", keys[name]],
                   check=True, capture_output=True)
  shutil.copy(keys["user"] + ".pub", os.path.join(directory, "authorized_keys"))
  with open(keys["host"] + ".pub") as f:
    host_key = " ".join(f.read().split()[:2])
  with open(os.path.join(directory, "known_hosts"), "w") as f:
    f.writelines(f"[{host.address}]:{SSH_PORT} {host_key}\n" for host in hosts)
  client = SshClient(keys["user"], os.path.join(directory, "bin"))
  os.makedirs(client.bin_dir)
  with open(os.path.join(client.bin_dir, "ssh"), "w") as f:
    f.write(f"#!/bin/sh\nexec {shutil.which('ssh')} -o UserKnownHostsFile={directory}/known_hosts"
            f" -o BatchMode=yes -o ConnectTimeout=10 -o LogLevel=ERROR \"$@\"\n")
  os.chmod(os.path.join(client.bin_dir, "ssh"), 0o755)
  os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory.
  servers = []
  try:
    for n, host in enumerate(hosts):
      config = os.path.join(directory, f"sshd_config_{n}")
      with open(config, "w") as f:
        f.write(f"Port {SSH_PORT}\nListenAddress {host.address}\nHostKey {keys['host']}\n"
                f"AuthorizedKeysFile {directory}/authorized_keys\n"
                f"PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                f"PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
                f"PidFile {directory}/sshd_{n}.pid\n")
      servers.append(subprocess.Popen(host.command(sshd, "-D", "-e", "-f", config),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for host in hosts:  # Each answers a login before the test goes on.
      deadline = time.monotonic() + 20
      while subprocess.run(
          host.command(f"{client.bin_dir}/ssh", "-p", str(SSH_PORT), "-i", client.identity,
                       host.address, "true"), capture_output=True, check=False).returncode:
        assert time.monotonic() < deadline, f"sshd on {host.address} did not answer"
        time.sleep(0.2)
    yield client
  finally:
    for server in servers:
      server.kill()
      server.wait()
