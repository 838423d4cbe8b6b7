"""Starts a training program as a local multi-process cluster.

  python -m estimator_dist.launch --strategy=parameter_server --num_workers=2 \\
      --num_ps=1 --evaluator -- python -m model_zoo.mnist_cnn --train_steps=300

For tf.distribute strategies every task is a process with its own TF_CONFIG on free
ports of 127.0.0.1; for Horovod the program runs under `horovodrun` (MPI when Horovod
was built with it, else Gloo), on this machine or on the hosts given with --hosts or
--hostfile. Output lines are prefixed with the task (`[worker:1]`).
When a task fails the others are stopped and the launcher exits with that task's code;
Ctrl-C stops everything.
"""

import signal
import socket
import sys
import tempfile

from absl import app
from absl import flags

from estimator_dist import errors
from estimator_dist import cluster as cluster_lib
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
           horovodrun_args=""):
  """Runs `command` as a job; returns its exit code.

  Every strategy runs on this machine, except horovod given `hosts` or `hostfile`.
  """
  strategy = factory.ALIASES.get(strategy, strategy)
  num_ps = jobs.default_num_ps(strategy, num_ps)
  jobs.check_topology(strategy, num_workers, num_ps, evaluator)
  jobs.check_command(command)
  if strategy != "horovod" and (hosts or hostfile or horovodrun_args):
    raise errors.ConfigError(
        f"--hosts, --hostfile and --horovodrun_args apply to --strategy=horovod; "
        f"{strategy} on several machines starts from TF_CONFIG (see `estimator-dist k8s` "
        f"and `estimator-dist slurm`) or estimator_dist.spark.run.")
  command = list(command) + [f"--strategy={strategy}"]
  if not any(a.startswith("--model_dir") for a in command):
    model_dir = model_dir or tempfile.mkdtemp(prefix="estimator_dist_")
    command.append(f"--model_dir={model_dir}")
  launcher = processes.Launcher(out)
  launcher.log(f"strategy={strategy} workers={num_workers} model_dir={model_dir}")
  # A job on this machine alone listens on loopback only (see estimator_dist.loopback).
  local = horovodrun.is_loopback(host) and (strategy != "horovod" or all(
      horovodrun.is_loopback(h) for h, _ in horovodrun.machines(num_workers, hosts, hostfile)))
  env_of = loopback.local_only_env if local else lambda env: env

  def on_signal(signum, _):
    launcher.log(f"signal {signum}: stopping all tasks")
    launcher.stop_all()
    sys.exit(128 + signum)
  previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
  try:
    if strategy == "horovod":
      launcher.start("horovodrun",
                     horovodrun.command(command, num_workers, hosts, hostfile,
                                        network_interface, horovod_controller,
                                        horovodrun_args),
                     env_of(_horovodrun_env()))
      training = {"horovodrun"}
    elif strategy in ("local", "mirrored"):
      devices = str(num_workers) if strategy == "mirrored" else None
      launcher.start("chief:0", command,
                     env_of(processes.child_env(**{cluster_lib.NUM_DEVICES_ENV: devices})))
      training = {"chief:0"}
    else:
      cluster = local_cluster(strategy, num_workers, num_ps, evaluator, host)
      training = set()
      for role, addresses in cluster.items():
        for index in range(len(addresses)):
          name = f"{role}:{index}"
          if role in cluster_lib.TRAINING_ROLES:
            training.add(name)
          launcher.start(name, command, env_of(
              processes.child_env(TF_CONFIG=cluster_lib.tf_config(cluster, role, index))))
    code = launcher.wait(training, shutdown_timeout_secs)
    launcher.log(f"job {'finished' if code == 0 else 'failed'} with exit code {code}")
    for fields in (f for t in launcher.tasks for f in t.summaries):
      launcher.log("summary\n" + summary.format_table(fields))
    return code
  finally:
    launcher.stop_all()
    for s, handler in previous.items():
      signal.signal(s, handler)


def main(argv):
  f = flags.FLAGS
  try:
    return launch(argv[1:], f.strategy, f.num_workers, f.num_ps, f.evaluator, f.model_dir,
                  f.host, f.shutdown_timeout_secs, horovod_controller=f.horovod_controller,
                  hosts=f.hosts, hostfile=f.hostfile, network_interface=f.network_interface,
                  horovodrun_args=f.horovodrun_args)
  except errors.ConfigError as e:
    sys.stderr.write(f"estimator_dist.launch: {e}\n")
    return 2


def run():
  define_flags()
  app.run(main)


if __name__ == "__main__":
  run()
