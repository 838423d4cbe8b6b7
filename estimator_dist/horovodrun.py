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
                "--network-interface", "--gloo", "--mpi", "-p", "--ssh-port", "--min-np",
                "--max-np", "--host-discovery-script")
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
            controller="auto", extra_args="", elastic=None):
  """The horovodrun command that runs `program` as `num_workers` ranks.

  Without `hosts` or `hostfile`, all ranks run on 127.0.0.1. `elastic` is
  (min_workers, max_workers, host_discovery_script): horovodrun then starts and stops
  ranks as the script's output ('host:slots' lines) changes.
  """
  errors.check_choice("horovod_controller", controller, CONTROLLERS)
  if elastic:
    return _elastic_command(program, num_workers, network_interface, controller, extra_args,
                            *elastic)
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
  return [_horovodrun(), *([f"--{controller}"] if controller != "auto" else []),
          "-np", str(num_workers), "-H", ",".join(f"{h}:{n}" for h, n in machines_),
          "--network-interface", network_interface, *_passed(extra_args), *program]


def _horovodrun():
  return os.path.join(os.path.dirname(sys.executable), "horovodrun")


def _passed(extra_args):
  passed = shlex.split(extra_args or "")
  own = sorted({a.split("=")[0] for a in passed} & set(_OWN_OPTIONS))
  if own:
    raise errors.ConfigError(
        f"--horovodrun_args may not set {own}: the launcher sets them from --num_workers, "
        f"--hosts/--hostfile, --network_interface, --horovod_controller and --elastic.")
  return passed


def _elastic_command(program, num_workers, network_interface, controller, extra_args,
                     min_workers, max_workers, discovery_script):
  if controller == "mpi":
    raise errors.ConfigError("--elastic needs Gloo (Horovod's elastic mode does not run on "
                             "MPI); drop --horovod_controller=mpi.")
  errors.check_positive("min_workers", min_workers)
  if not min_workers <= num_workers <= max_workers:
    raise errors.ConfigError(
        f"--elastic needs --min_workers <= --num_workers <= --max_workers; got {min_workers}, "
        f"{num_workers}, {max_workers}.")
  if not os.access(discovery_script, os.X_OK):
    raise errors.ConfigError(f"--host_discovery_script {discovery_script!r} is not an "
                             f"executable file; it must print one 'host:slots' line per host.")
  return [_horovodrun(), "--gloo", "-np", str(num_workers), "--min-np", str(min_workers),
          "--max-np", str(max_workers), "--host-discovery-script", discovery_script,
          "--network-interface", network_interface or "lo", *_passed(extra_args), *program]
