"""The `horovodrun` command the launcher runs for `--strategy=horovod`.

On one machine the ranks bind to the loopback interface. On several machines
(`--hosts=h1:2,h2:2` or `--hostfile`) horovodrun starts the ranks over SSH, and Gloo
and MPI bind to the interface the user names with `--network_interface`.
"""

import dataclasses
import os
import re
import shlex
import shutil
import sys
from typing import Optional, Tuple

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.contract import bind_address
from estimator_dist.contract import env_vars
from estimator_dist.option_flags import option

CONTROLLERS = ("auto", "mpi", "gloo")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1")
# Options the launcher sets itself; the rest of horovodrun's options pass through.
_OWN_OPTIONS = ("-np", "--num-proc", "-H", "--hosts", "-hostfile", "--hostfile",
                "--network-interface", "--gloo", "--mpi", "--min-np", "--max-np",
                "--host-discovery-script")
_ORTED_VARIABLE = "OMPI_MCA_orte_launch_agent"  # How mpirun starts its daemons.
_HOST = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+$")
_PREEMPTION_SIGNALS = "TERM,USR1"


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


@dataclasses.dataclass(frozen=True)
class Elastic:
  """Elastic mode: ranks come and go between min_workers and max_workers as the hosts
  that `discovery_script` prints ('host:slots' lines) change (None: the launcher
  writes one that prints a file of this machine's slots). Unset, the flags leave the
  program to decide (1, and its --num_workers)."""
  min_workers: int = option(kind="integer", flag_default=None,
                            help="--elastic: fewest ranks (default 1).")
  max_workers: int = option(kind="integer", flag_default=None,
                            help="--elastic: most ranks (default --num_workers).")
  discovery_script: Optional[str] = option(
      None, kind="string", name="host_discovery_script", help="--elastic: prints one "
      "'host:slots' line per available host (default: a script that prints a file of this "
      "machine's slots, which you edit).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class HorovodRun:
  """How horovodrun starts the ranks; each field's flag says what it does.

  hosts or hostfile are parsed once, into `machines`. elastic: Elastic, or None.
  """
  controller: str = option(
      "auto", kind="enum", values=CONTROLLERS, name="horovod_controller",
      help="horovod: how horovodrun connects the ranks; auto picks MPI when Horovod was "
      "built with it (shared memory between ranks of one host), else Gloo.")
  hosts: Optional[str] = option(
      None, kind="string", help="horovod: machines and their slots, host1:2,host2:2 "
      "(default: all ranks on 127.0.0.1).")
  hostfile: Optional[str] = option(
      None, kind="string", help="horovod: a horovodrun hostfile, one 'host slots=N' line "
      "per machine.")
  network_interface: Optional[str] = option(
      None, kind="string", help="horovod on several hosts: the interface of their private "
      "network, which Gloo and MPI bind to (e.g. eth1).")
  extra_args: str = option(
      "", kind="string", name="horovodrun_args", help="horovod: more horovodrun options, "
      "passed as they are, e.g. '--fusion-threshold-mb=32 --cycle-time-ms=2'.")
  elastic: Optional[Elastic] = None
  machines: Optional[Tuple[Tuple[str, int], ...]] = dataclasses.field(default=None, init=False)

  def __post_init__(self):
    option_flags.check_declared(self)
    if self.hosts and self.hostfile:
      raise errors.ConfigError("give --hosts or --hostfile, not both.")
    parsed = (parse_hostfile(self.hostfile) if self.hostfile else
              parse_hosts(self.hosts) if self.hosts else None)
    object.__setattr__(self, "machines", tuple(parsed) if parsed else None)
    _passed(self.extra_args)  # Checks them.

  @property
  def is_default(self) -> bool:
    return self == HorovodRun()

  def machines_for(self, num_workers):
    """[(host, slots)]: the given hosts, else all ranks on 127.0.0.1."""
    return list(self.machines or [("127.0.0.1", num_workers)])

  def is_local(self, num_workers) -> bool:
    """All ranks on this machine: loopback hosts, and for an elastic job no interface of
    another network (its discovery script may name other hosts later)."""
    if self.elastic and self.network_interface not in (None, "lo"):
      return False
    return all(is_loopback(h) for h, _ in self.machines_for(num_workers))


def across_hosts_env(env, interface):
  """The environment of horovodrun (or horovod.spark) for a job across hosts: every process
  of the job that inherits it (horovodrun's services, mpirun and its daemons, the ranks)
  listens on `interface` only."""
  agent = env.get(_ORTED_VARIABLE, "orted")
  env = {**env, "OMPI_MCA_oob_tcp_if_include": interface}  # MPI's out-of-band channel.
  bound = bind_address.interface_env(env, interface)
  if bound is None:
    return env
  # mpirun starts its daemon on each other host over SSH with none of this environment
  # (Open MPI 4; the agent is split at spaces).
  library = bound["LD_PRELOAD"].split(":")[0]
  return {**bound, _ORTED_VARIABLE: (f"env LD_PRELOAD={library} "
                                     f"{env_vars.BIND_INTERFACE}={interface} {agent}")}


def command(program, *, num_workers, run=None):
  """The horovodrun command that runs `program` as `num_workers` ranks, as `run` says."""
  run = run or HorovodRun()
  if run.elastic:
    return _elastic_command(program, num_workers, run)
  machines_ = run.machines_for(num_workers)
  slots = sum(n for _, n in machines_)
  if slots < num_workers:
    raise errors.ConfigError(
        f"--num_workers={num_workers} Horovod ranks need {num_workers} slots, but the hosts "
        f"have {slots} ({', '.join(f'{h}:{n}' for h, n in machines_)}). Add slots or hosts.")
  network_interface = run.network_interface
  if network_interface is None:
    if not run.is_local(num_workers):
      raise errors.ConfigError(
          "a multi-host Horovod job needs --network_interface: the interface of the private "
          "network its hosts share (for example eth1). Gloo and MPI bind to it; they accept "
          "anyone who can reach their ports.")
    network_interface = "lo"
  controller = run.controller
  return [*_horovodrun(), *([f"--{controller}"] if controller != "auto" else []),
          "-np", str(num_workers), "-H", ",".join(f"{h}:{n}" for h, n in machines_),
          "--network-interface", network_interface, *_passed(run.extra_args), *program]


def shielded(command, env, *, directory):
  """(command, env) of a local horovodrun that a signal sent to every process of the job
  (systemctl stop, pkill) does not end before its ranks saved: mpirun would take SIGTERM
  as an order to kill them, and horovodrun, its shell, or under Gloo a rank's shell would
  die of it. horovodrun and what it starts ignore the preemption signals (a program's own
  handlers take them: task/preemption.py), and mpirun, which sets handlers of its own,
  runs through a wrapper first on the PATH (in `directory`) that keeps them blocked; it
  starts its ranks with none blocked and their default handling."""
  env = dict(env)
  mpirun = shutil.which("mpirun", path=env.get("PATH"))
  if mpirun:
    wrapper = os.path.join(directory, "bin", "mpirun")
    os.makedirs(os.path.dirname(wrapper), exist_ok=True)
    with open(wrapper, "w") as f:
      f.write(f"#!/bin/sh\nexec env --block-signal={_PREEMPTION_SIGNALS} "
              f"{shlex.quote(mpirun)} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    env["PATH"] = os.pathsep.join([os.path.dirname(wrapper), env.get("PATH", os.defpath)])
  return ["env", f"--ignore-signal={_PREEMPTION_SIGNALS}", *command], env


def _horovodrun():
  """horovodrun, asked about Horovod's build once per install (horovodrun_entry)."""
  return [sys.executable, "-m", "estimator_dist.jobs.horovodrun_entry"]


def _passed(extra_args):
  passed = shlex.split(extra_args or "")
  own = sorted({a.split("=")[0] for a in passed} & set(_OWN_OPTIONS))
  if own:
    raise errors.ConfigError(
        f"--horovodrun_args may not set {own}: the launcher sets them from --num_workers, "
        f"--hosts/--hostfile, --network_interface, --horovod_controller and --elastic.")
  return passed


def _elastic_command(program, num_workers, run):
  elastic = run.elastic
  if run.controller == "mpi":
    raise errors.ConfigError("--elastic needs Gloo (Horovod's elastic mode does not run on "
                             "MPI); drop --horovod_controller=mpi.")
  errors.check_positive("min_workers", elastic.min_workers)
  if not elastic.min_workers <= num_workers <= elastic.max_workers:
    raise errors.ConfigError(
        f"--elastic needs --min_workers <= --num_workers <= --max_workers; got "
        f"{elastic.min_workers}, {num_workers}, {elastic.max_workers}.")
  if not os.access(elastic.discovery_script, os.X_OK):
    raise errors.ConfigError(
        f"--host_discovery_script {elastic.discovery_script!r} is not an executable file; "
        f"it must print one 'host:slots' line per host.")
  return [*_horovodrun(), "--gloo", "-np", str(num_workers), "--min-np",
          str(elastic.min_workers), "--max-np", str(elastic.max_workers),
          "--host-discovery-script", elastic.discovery_script, "--network-interface",
          run.network_interface or "lo", *_passed(run.extra_args), *program]


def local_discovery_script(num_workers, *, directory, log):
  """A host discovery script in `directory` that prints a file of this machine's slots;
  returns its path."""
  hosts, script = os.path.join(directory, "hosts"), os.path.join(directory, "discover.sh")
  with open(hosts, "w") as f:
    f.write(f"localhost:{num_workers}\n")
  with open(script, "w") as f:
    f.write(f"#!/bin/sh\ncat {hosts}\n")
  os.chmod(script, 0o755)
  log(f"elastic: the hosts are the lines of {hosts} (host:slots); edit it to add "
      f"or remove workers")
  return script
