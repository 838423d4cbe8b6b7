"""The `horovodrun` command the launcher runs for `--strategy=horovod`.

On one machine the ranks bind to the loopback interface. On several machines
(`--hosts=h1:2,h2:2` or `--hostfile`) horovodrun starts the ranks over SSH, and Gloo
and MPI bind to the interface the user names with `--network_interface`.
"""

import os
import re
import shlex
import sys

from estimator_dist import errors

CONTROLLERS = ("auto", "mpi", "gloo")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1")
# Options the launcher sets itself; the rest of horovodrun's options pass through.
_OWN_OPTIONS = ("-np", "--num-proc", "-H", "--hosts", "-hostfile", "--hostfile",
                "--network-interface", "--gloo", "--mpi", "-p", "--ssh-port")
_HOST = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+$")


def parse_hosts(hosts):
  """'h1:2,h2:2' -> [('h1', 2), ('h2', 2)]; a host without ':N' has one slot."""
  parsed = []
  for item in hosts.split(","):
    host, _, slots = item.strip().rpartition(":") if ":" in item else (item.strip(), "", "1")
    if not host or not _HOST.match(host) or not slots.isdigit() or int(slots) < 1:
      raise errors.ConfigError(
          f"--hosts item {item!r} is not host:slots; write --hosts=host1:2,host2:2 (one "
          f"slot per Horovod rank).")
    parsed.append((host, int(slots)))
  return parsed


def parse_hostfile(path):
  """A hostfile ('host slots=N' per line, '#' comments; no slots is 1) -> [(host, slots)]."""
  if not os.path.isfile(path):
    raise errors.ConfigError(f"--hostfile {path!r} does not exist; give a file with one "
                             f"'hostname slots=N' line per machine.")
  parsed = []
  with open(path) as f:
    for number, line in enumerate(f, 1):
      line = line.split("#")[0].strip()
      if not line:
        continue
      match = re.fullmatch(r"(\S+)(?:\s+slots\s*=\s*(\d+))?", line)
      if not match or int(match.group(2) or 1) < 1:
        raise errors.ConfigError(f"--hostfile {path!r} line {number} is {line!r}: write "
                                 f"'hostname slots=N'.")
      parsed.append((match.group(1), int(match.group(2) or 1)))
  if not parsed:
    raise errors.ConfigError(f"--hostfile {path!r} lists no host.")
  return parsed


def is_loopback(host):
  return host in LOOPBACK_HOSTS or host.startswith("127.")


def machines(num_workers, hosts=None, hostfile=None):
  """[(host, slots)] of a job: from `hosts` or `hostfile`, else all on 127.0.0.1."""
  if hosts and hostfile:
    raise errors.ConfigError("give --hosts or --hostfile, not both.")
  return (parse_hostfile(hostfile) if hostfile else
          parse_hosts(hosts) if hosts else [("127.0.0.1", num_workers)])


def command(program, num_workers, hosts=None, hostfile=None, network_interface=None,
            controller="auto", extra_args=""):
  """The horovodrun command that runs `program` as `num_workers` ranks.

  Without `hosts` or `hostfile`, all ranks run on 127.0.0.1.
  """
  errors.check_choice("horovod_controller", controller, CONTROLLERS)
  machines_ = machines(num_workers, hosts, hostfile)
  slots = sum(n for _, n in machines_)
  if slots < num_workers:
    raise errors.ConfigError(
        f"--num_workers={num_workers} Horovod ranks need {num_workers} slots, but the hosts "
        f"have {slots} ({', '.join(f'{h}:{n}' for h, n in machines_)}). Add slots or hosts.")
  if network_interface is None:
    if not all(is_loopback(h) for h, _ in machines_):
      raise errors.ConfigError(
          "a multi-host Horovod job needs --network_interface: the interface of the private "
          "network its hosts share (for example eth1). Gloo and MPI bind to it; they accept "
          "anyone who can reach their ports.")
    network_interface = "lo"
  passed = shlex.split(extra_args or "")
  own = sorted({a.split("=")[0] for a in passed} & set(_OWN_OPTIONS))
  if own:
    raise errors.ConfigError(
        f"--horovodrun_args may not set {own}: the launcher sets them from --num_workers, "
        f"--hosts/--hostfile, --network_interface and --horovod_controller.")
  horovodrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
  return [horovodrun, *([f"--{controller}"] if controller != "auto" else []),
          "-np", str(num_workers), "-H", ",".join(f"{h}:{n}" for h, n in machines_),
          "--network-interface", network_interface,
          *passed, *program]
