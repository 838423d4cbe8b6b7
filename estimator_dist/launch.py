"""Starts a training program as a local multi-process cluster.

  python -m estimator_dist.launch --strategy=parameter_server --num_workers=2 \\
      --num_ps=1 --evaluator -- python -m model_zoo.mnist_cnn --train_steps=300

For tf.distribute strategies every task is a process with its own TF_CONFIG on free
ports of 127.0.0.1; for Horovod the program runs under `horovodrun` (MPI when Horovod
was built with it, else Gloo), on this machine or on the hosts given with --hosts or
--hostfile. Output lines are prefixed with the task (`[worker:1]`).
When a task fails or stops making progress (heartbeats), the others are stopped and the
launcher exits with that task's code, or with --max_restarts starts the job again from
its latest checkpoint. --elastic runs Horovod's elastic mode. Ctrl-C stops everything.
"""

import os
import signal
import socket
import sys
import tempfile

from absl import app
from absl import flags

from estimator_dist import errors
from estimator_dist import cluster as cluster_lib
from estimator_dist import heartbeat
from estimator_dist import horovodrun
from estimator_dist import jobs
from estimator_dist import loopback
from estimator_dist import processes
from estimator_dist import summary
from estimator_dist.strategies import factory


def define_flags():
  jobs.define_flags()
  flags.DEFINE_string("model_dir", None, "Passed to the program as --model_dir unless its "
                      "arguments have one (default: a new temporary directory).")
  flags.DEFINE_string("host", "127.0.0.1", "Address the tasks of a local job bind to.")
  flags.DEFINE_enum("horovod_controller", "auto", horovodrun.CONTROLLERS,
                    "horovod: how horovodrun connects the ranks; auto picks MPI when Horovod "
                    "was built with it (shared memory between ranks of one host), else Gloo.")
  flags.DEFINE_string("hosts", None, "horovod: machines and their slots, host1:2,host2:2 "
                      "(default: all ranks on 127.0.0.1).")
  flags.DEFINE_string("hostfile", None, "horovod: a horovodrun hostfile, one 'host slots=N' "
                      "line per machine.")
  flags.DEFINE_string("network_interface", None, "horovod on several hosts: the interface of "
                      "their private network, which Gloo and MPI bind to (e.g. eth1).")
  flags.DEFINE_string("horovodrun_args", "", "horovod: more horovodrun options, passed as "
                      "they are, e.g. '--fusion-threshold-mb=32 --cycle-time-ms=2'.")
  flags.DEFINE_bool("elastic", False, "horovod: elastic training; ranks come and go between "
                    "--min_workers and --max_workers as the hosts change.")
  flags.DEFINE_integer("min_workers", None, "--elastic: fewest ranks (default 1).")
  flags.DEFINE_integer("max_workers", None, "--elastic: most ranks (default --num_workers).")
  flags.DEFINE_string("host_discovery_script", None, "--elastic: prints one 'host:slots' line "
                      "per available host (default: a script that prints a file of this "
                      "machine's slots, which you edit).")
  flags.DEFINE_integer("max_restarts", 0, "When a task fails, start the whole job again up "
                       "to this many times; it resumes from the latest checkpoint.",
                       lower_bound=0)
  flags.DEFINE_integer("hang_timeout_secs", 300, "Stop the job (and restart it, with "
                       "--max_restarts) when a training task of a local job makes no "
                       "progress for this long; 0 never does.", lower_bound=0)
  flags.DEFINE_integer("shutdown_timeout_secs", 300,
                       "After training ends, seconds ps and evaluator tasks get to exit.",
                       lower_bound=1)


def free_ports(count, host="127.0.0.1"):
  """`count` distinct ports free on `host` (held open together while chosen)."""
  sockets = []
  try:
    for _ in range(count):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.bind((host, 0))
      sockets.append(s)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def local_cluster(strategy, num_workers, num_ps=0, evaluator=False, host="127.0.0.1"):
  """The cluster of a local tf.distribute job: chief, workers, ps and evaluator."""
  roles = [("chief", 1), ("worker", num_workers - 1), ("ps", num_ps),
           ("evaluator", 1 if evaluator else 0)]
  ports = iter(free_ports(sum(n for _, n in roles), host))
  return {role: tuple(f"{host}:{next(ports)}" for _ in range(n)) for role, n in roles if n}


def _horovodrun_env():
  # mpirun tags every write, not every line, and an unbuffered print writes each of
  # its arguments on its own; buffered, a flushed print or log record is one write.
  env = processes.child_env()
  env.pop("PYTHONUNBUFFERED")
  return env


def launch(command, strategy, num_workers, num_ps=None, evaluator=False, model_dir=None,
           host="127.0.0.1", shutdown_timeout_secs=300, out=sys.stdout,
           horovod_controller="auto", hosts=None, hostfile=None, network_interface=None,
           horovodrun_args="", max_restarts=0, hang_timeout_secs=300, elastic=False,
           min_workers=None, max_workers=None, host_discovery_script=None):
  """Runs `command` as a job; returns its exit code.

  Every strategy runs on this machine, except horovod given `hosts` or `hostfile`. When
  a task fails, every task is stopped; with `max_restarts`, the whole job then starts
  again (up to that many times) and resumes from the latest checkpoint.
  """
  errors.check_positive("max_restarts", max_restarts + 1)
  strategy = factory.ALIASES.get(strategy, strategy)
  num_ps = jobs.default_num_ps(strategy, num_ps)
  jobs.check_topology(strategy, num_workers, num_ps, evaluator)
  jobs.check_command(command)
  if strategy != "horovod" and (hosts or hostfile or horovodrun_args or elastic):
    raise errors.ConfigError(
        f"--hosts, --hostfile, --horovodrun_args and --elastic apply to --strategy=horovod; "
        f"{strategy} on several machines starts from TF_CONFIG (see `estimator-dist k8s` "
        f"and `estimator-dist slurm`) or estimator_dist.spark.run.")
  command = list(command) + [f"--strategy={strategy}"]
  given = [a.split("=", 1)[1] for a in command if a.startswith("--model_dir=")]
  if given:
    model_dir = given[-1]
  else:
    model_dir = model_dir or tempfile.mkdtemp(prefix="estimator_dist_")
    command.append(f"--model_dir={model_dir}")
  local = horovodrun.is_loopback(host) and (strategy != "horovod" or all(
      horovodrun.is_loopback(h) for h, _ in horovodrun.machines(num_workers, hosts, hostfile)))
  # Heartbeats go through a directory of this machine: local jobs only.
  launcher = processes.Launcher(out, hang_timeout_secs if local else None)
  launcher.log(f"strategy={strategy} workers={num_workers} model_dir={model_dir}")

  def env_of(env):
    if launcher.heartbeats:
      env = {**env, heartbeat.HEARTBEAT_ENV: launcher.heartbeats}
    # A job on this machine alone listens on loopback only (see estimator_dist.loopback).
    return loopback.local_only_env(env) if local else env

  def on_signal(signum, _):
    launcher.log(f"signal {signum}: stopping all tasks")
    launcher.stop_all()
    sys.exit(128 + signum)
  previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

  elastic_args = None
  if elastic:
    if not host_discovery_script:
      host_discovery_script = _local_discovery_script(num_workers, launcher)
    elastic_args = (min_workers or 1, max_workers or num_workers, host_discovery_script)

  def start_tasks():
    """Starts every task of the job; returns the names of the training tasks."""
    if strategy == "horovod":
      launcher.start("horovodrun",
                     horovodrun.command(command, num_workers, hosts, hostfile,
                                        network_interface, horovod_controller,
                                        horovodrun_args, elastic_args),
                     env_of(_horovodrun_env()))
      return {"horovodrun"}
    if strategy in ("local", "mirrored"):
      devices = str(num_workers) if strategy == "mirrored" else None
      launcher.start("chief:0", command,
                     env_of(processes.child_env(**{cluster_lib.NUM_DEVICES_ENV: devices})))
      return {"chief:0"}
    cluster = local_cluster(strategy, num_workers, num_ps, evaluator, host)
    for role, addresses in cluster.items():
      for index in range(len(addresses)):
        launcher.start(f"{role}:{index}", command, env_of(
            processes.child_env(TF_CONFIG=cluster_lib.tf_config(cluster, role, index))))
    return {f"{role}:{i}" for role in cluster_lib.TRAINING_ROLES
            for i in range(len(cluster.get(role, ())))}

  try:
    for attempt in range(max_restarts + 1):
      if attempt:
        launcher.forget_tasks()
        launcher.log(f"restart {attempt} of {max_restarts}: starting every task again; "
                     f"training resumes from {_latest_checkpoint(model_dir)}")
      code = launcher.wait(start_tasks(), shutdown_timeout_secs)
      if code in (0, errors.DIVERGED_EXIT_CODE):
        break
    if code == errors.DIVERGED_EXIT_CODE:
      launcher.log("training diverged; a restart from the same checkpoint would diverge again")
    launcher.log(f"job {'finished' if code == 0 else 'failed'} with exit code {code}")
    for fields in (f for t in launcher.tasks for f in t.summaries):
      launcher.log("summary\n" + summary.format_table(fields))
    return code
  finally:
    launcher.close()
    for s, handler in previous.items():
      signal.signal(s, handler)


def _local_discovery_script(num_workers, launcher):
  """A host discovery script that prints a file of this machine's slots; returns its path."""
  directory = launcher.temporary_directory("estimator_dist_elastic_")
  hosts, script = os.path.join(directory, "hosts"), os.path.join(directory, "discover.sh")
  with open(hosts, "w") as f:
    f.write(f"localhost:{num_workers}\n")
  with open(script, "w") as f:
    f.write(f"#!/bin/sh\ncat {hosts}\n")
  os.chmod(script, 0o755)
  launcher.log(f"elastic: the hosts are the lines of {hosts} (host:slots); edit it to add "
               f"or remove workers")
  return script


def _latest_checkpoint(model_dir):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.train.latest_checkpoint(model_dir) or f"the start (no checkpoint in {model_dir})"


def main(argv):
  f = flags.FLAGS
  try:
    return launch(argv[1:], f.strategy, f.num_workers, f.num_ps, f.evaluator, f.model_dir,
                  f.host, f.shutdown_timeout_secs, horovod_controller=f.horovod_controller,
                  hosts=f.hosts, hostfile=f.hostfile, network_interface=f.network_interface,
                  horovodrun_args=f.horovodrun_args, max_restarts=f.max_restarts,
                  hang_timeout_secs=f.hang_timeout_secs, elastic=f.elastic,
                  min_workers=f.min_workers, max_workers=f.max_workers,
                  host_discovery_script=f.host_discovery_script)
  except errors.ConfigError as e:
    sys.stderr.write(f"estimator_dist.launch: {e}\n")
    return 2


def run():
  define_flags()
  app.run(main)


if __name__ == "__main__":
  run()
