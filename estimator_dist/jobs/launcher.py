"""The local engine: runs a job's tasks as processes of this machine and watches them.

  code = launch(JobSpec(strategy="parameter_server", num_workers=2, evaluator=True,
                        command=["python", "-m", "model_zoo.mnist_cnn"]))

For tf.distribute strategies every task is a process with its own TF_CONFIG on free
ports of 127.0.0.1; for Horovod the program runs under `horovodrun` (MPI when Horovod
was built with it, else Gloo), on this machine or on the hosts given with --hosts or
--hostfile. Output lines are prefixed with the task (`[worker:1]`).
When a task fails or stops making progress (heartbeats), the others are stopped and the
launcher exits with that task's code, or with --max_restarts starts the job again from
its latest checkpoint. --elastic runs Horovod's elastic mode. Ctrl-C stops everything.
"""

import dataclasses
import os
import signal
import socket
import sys
import tempfile
from typing import Optional

from estimator_dist import errors
from estimator_dist.jobs import horovodrun
from estimator_dist.jobs import loopback
from estimator_dist.jobs import processes
from estimator_dist.task import cluster as cluster_lib
from estimator_dist.task import heartbeat
from estimator_dist.task import summary


@dataclasses.dataclass(frozen=True, kw_only=True)
class LaunchOptions:
  """How the local engine runs a job.

  model_dir: passed to the program as --model_dir unless its arguments have one
    (default: a new temporary directory).
  host: the address the tasks of a local job bind to.
  max_restarts: when a task fails, start the whole job again up to this many times; it
    resumes from the latest checkpoint.
  hang_timeout_secs: stop the job when a training task of a local job makes no progress
    for this long (0: never).
  shutdown_timeout_secs: after training ends, seconds ps and evaluator tasks get to exit.
  horovod: how horovodrun starts the ranks (strategy horovod only).
  """
  model_dir: Optional[str] = None
  host: str = "127.0.0.1"
  max_restarts: int = 0
  hang_timeout_secs: int = 300
  shutdown_timeout_secs: int = 300
  horovod: horovodrun.HorovodRun = horovodrun.HorovodRun()

  def __post_init__(self):
    errors.check_non_negative("max_restarts", self.max_restarts)
    errors.check_non_negative("hang_timeout_secs", self.hang_timeout_secs)
    errors.check_positive("shutdown_timeout_secs", self.shutdown_timeout_secs)


def free_ports(count, *, host="127.0.0.1"):
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


def local_cluster(job, *, host="127.0.0.1"):
  """The cluster of a local tf.distribute job: chief, workers, ps and evaluator."""
  roles = [("chief", 1), ("worker", job.num_workers - 1), ("ps", job.num_ps),
           ("evaluator", int(job.evaluator))]
  ports = iter(free_ports(sum(n for _, n in roles), host=host))
  return {role: tuple(f"{host}:{next(ports)}" for _ in range(n)) for role, n in roles if n}


def _horovodrun_env():
  # mpirun tags every write, not every line, and an unbuffered print writes each of
  # its arguments on its own; buffered, a flushed print or log record is one write.
  env = processes.child_env()
  env.pop("PYTHONUNBUFFERED")
  return env


def launch(job, *, options=LaunchOptions(), out=sys.stdout):
  """Runs `job` (a JobSpec) on this machine; returns its exit code.

  Every strategy runs on this machine, except horovod given hosts. When a task fails,
  every task is stopped; with `options.max_restarts`, the whole job then starts again
  (up to that many times) and resumes from the latest checkpoint.
  """
  run = options.horovod
  if job.strategy != "horovod" and not run.is_default:
    raise errors.ConfigError(
        f"--hosts, --hostfile, --horovodrun_args and --elastic apply to --strategy=horovod; "
        f"{job.strategy} on several machines starts from TF_CONFIG (see `estimator-dist k8s` "
        f"and `estimator-dist slurm`) or estimator_dist.jobs.spark.run.")
  command = list(job.program)
  given = [a.split("=", 1)[1] for a in command if a.startswith("--model_dir=")]
  if given:
    model_dir = given[-1]
  else:
    model_dir = options.model_dir or tempfile.mkdtemp(prefix="estimator_dist_")
    command.append(f"--model_dir={model_dir}")
  host = options.host
  local = horovodrun.is_loopback(host) and (
      job.strategy != "horovod" or run.is_local(job.num_workers))
  # Heartbeats go through a directory of this machine: local jobs only.
  launcher = processes.Launcher(out, options.hang_timeout_secs if local else None)
  launcher.log(f"strategy={job.strategy} workers={job.num_workers} model_dir={model_dir}")

  def env_of(env):
    if launcher.heartbeats:
      env = {**env, heartbeat.HEARTBEAT_ENV: launcher.heartbeats}
    # A job on this machine alone listens on loopback only (see estimator_dist.jobs.loopback).
    return loopback.local_only_env(env) if local else env

  def on_signal(signum, _):
    launcher.log(f"signal {signum}: stopping all tasks")
    launcher.stop_all()
    sys.exit(128 + signum)
  previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

  if run.elastic and not run.elastic.discovery_script:
    run = dataclasses.replace(run, elastic=dataclasses.replace(
        run.elastic, discovery_script=_local_discovery_script(job.num_workers, launcher)))

  def start_tasks():
    """Starts every task of the job; returns the names of the training tasks."""
    if job.strategy == "horovod":
      launcher.start("horovodrun", horovodrun.command(command, num_workers=job.num_workers, run=run),
                     env_of(_horovodrun_env()))
      return {"horovodrun"}
    if job.traits.one_process:
      devices = str(job.num_workers) if job.strategy == "mirrored" else None
      launcher.start("chief:0", command,
                     env_of(processes.child_env(**{cluster_lib.NUM_DEVICES_ENV: devices})))
      return {"chief:0"}
    cluster = local_cluster(job, host=host)
    for role, addresses in cluster.items():
      for index in range(len(addresses)):
        launcher.start(f"{role}:{index}", command, env_of(
            processes.child_env(TF_CONFIG=cluster_lib.tf_config(cluster, role, index))))
    return {f"{role}:{i}" for role in cluster_lib.TRAINING_ROLES
            for i in range(len(cluster.get(role, ())))}

  try:
    for attempt in range(options.max_restarts + 1):
      if attempt:
        launcher.forget_tasks()
        launcher.log(f"restart {attempt} of {options.max_restarts}: starting every task "
                     f"again; training resumes from {_latest_checkpoint(model_dir)}")
      code = launcher.wait(start_tasks(), options.shutdown_timeout_secs)
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
