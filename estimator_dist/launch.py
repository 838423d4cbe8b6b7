"""`estimator-dist launch`: start a training program as a local multi-process job.

  python -m estimator_dist.launch --strategy=parameter_server --num_workers=2 \\
      --num_ps=1 --evaluator -- python -m model_zoo.mnist_cnn --train_steps=300

The flags become a JobSpec and LaunchOptions; `estimator_dist.jobs.launcher` runs them.
"""

import dataclasses
import signal
import sys

from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import task_env
from estimator_dist.jobs import horovodrun
from estimator_dist.jobs import launcher
from estimator_dist.jobs import sandbox
from estimator_dist.jobs import spec


@dataclasses.dataclass(frozen=True, kw_only=True)
class LaunchFlags:
  """The launcher's flags, as FlagHolders."""
  job: spec.JobFlags
  model_dir: flags.FlagHolder
  host: flags.FlagHolder
  isolation: flags.FlagHolder
  allow_every_interface: flags.FlagHolder
  horovod_controller: flags.FlagHolder
  hosts: flags.FlagHolder
  hostfile: flags.FlagHolder
  network_interface: flags.FlagHolder
  horovodrun_args: flags.FlagHolder
  elastic: flags.FlagHolder
  min_workers: flags.FlagHolder
  max_workers: flags.FlagHolder
  host_discovery_script: flags.FlagHolder
  max_restarts: flags.FlagHolder
  hang_timeout_secs: flags.FlagHolder
  startup_timeout_secs: flags.FlagHolder
  shutdown_timeout_secs: flags.FlagHolder
  progress_secs: flags.FlagHolder
  curves: flags.FlagHolder
  mlflow_tracking_uri: flags.FlagHolder
  preemption_grace_secs: flags.FlagHolder

  def options(self) -> launcher.LaunchOptions:
    elastic = None
    if self.elastic.value:
      elastic = horovodrun.Elastic(
          min_workers=self.min_workers.value or 1,
          max_workers=self.max_workers.value or self.job.num_workers.value,
          discovery_script=self.host_discovery_script.value)
    run = horovodrun.HorovodRun(
        controller=self.horovod_controller.value, hosts=self.hosts.value,
        hostfile=self.hostfile.value, network_interface=self.network_interface.value,
        extra_args=self.horovodrun_args.value, elastic=elastic)
    return launcher.LaunchOptions(
        model_dir=self.model_dir.value, host=self.host.value, isolation=self.isolation.value,
        allow_every_interface=self.allow_every_interface.value,
        max_restarts=self.max_restarts.value, hang_timeout_secs=self.hang_timeout_secs.value,
        startup_timeout_secs=self.startup_timeout_secs.value,
        shutdown_timeout_secs=self.shutdown_timeout_secs.value,
        progress_secs=self.progress_secs.value, curves=self.curves.value,
        mlflow_tracking_uri=self.mlflow_tracking_uri.value, horovod=run,
        preemption_grace_secs=self.preemption_grace_secs.value)


def define_flags(flag_values=flags.FLAGS) -> LaunchFlags:
  """Defines the launcher's flags on `flag_values`."""
  f = flag_values
  return LaunchFlags(
      job=spec.define_flags(f),
      model_dir=flags.DEFINE_string(
          "model_dir", None, "Passed to the program as --model_dir unless its arguments "
          "have one (default: a new temporary directory).", flag_values=f),
      host=flags.DEFINE_string("host", "127.0.0.1",
                               "Address the tasks of a local job bind to.", flag_values=f),
      isolation=flags.DEFINE_enum(
          "isolation", "auto", sandbox.ISOLATIONS,
          "auto: run a local job's tasks in their own network and process namespaces, "
          "where no other process can reach their ports and which end with the launcher "
          "(the host network where the machine cannot make them); private: refuse to run "
          "without them; host: the host network (loopback).", flag_values=f),
      allow_every_interface=flags.DEFINE_bool(
          "allow_every_interface", False, "On the host network, run even where the job's "
          "servers would listen on every interface, reachable from other machines (no C "
          "compiler to build the library that keeps them on loopback: `make setup` builds "
          "it); without it such a job is refused.", flag_values=f),
      horovod_controller=flags.DEFINE_enum(
          "horovod_controller", "auto", horovodrun.CONTROLLERS,
          "horovod: how horovodrun connects the ranks; auto picks MPI when Horovod was built "
          "with it (shared memory between ranks of one host), else Gloo.", flag_values=f),
      hosts=flags.DEFINE_string(
          "hosts", None, "horovod: machines and their slots, host1:2,host2:2 (default: all "
          "ranks on 127.0.0.1).", flag_values=f),
      hostfile=flags.DEFINE_string(
          "hostfile", None, "horovod: a horovodrun hostfile, one 'host slots=N' line per "
          "machine.", flag_values=f),
      network_interface=flags.DEFINE_string(
          "network_interface", None, "horovod on several hosts: the interface of their "
          "private network, which Gloo and MPI bind to (e.g. eth1).", flag_values=f),
      horovodrun_args=flags.DEFINE_string(
          "horovodrun_args", "", "horovod: more horovodrun options, passed as they are, "
          "e.g. '--fusion-threshold-mb=32 --cycle-time-ms=2'.", flag_values=f),
      elastic=flags.DEFINE_bool(
          "elastic", False, "horovod: elastic training; ranks come and go between "
          "--min_workers and --max_workers as the hosts change.", flag_values=f),
      min_workers=flags.DEFINE_integer(
          "min_workers", None, "--elastic: fewest ranks (default 1).", flag_values=f),
      max_workers=flags.DEFINE_integer(
          "max_workers", None, "--elastic: most ranks (default --num_workers).",
          flag_values=f),
      host_discovery_script=flags.DEFINE_string(
          "host_discovery_script", None, "--elastic: prints one 'host:slots' line per "
          "available host (default: a script that prints a file of this machine's slots, "
          "which you edit).", flag_values=f),
      max_restarts=flags.DEFINE_integer(
          "max_restarts", 0, "When a task fails, start the whole job again up to this many "
          "times; it resumes from the latest checkpoint.", lower_bound=0, flag_values=f),
      hang_timeout_secs=flags.DEFINE_integer(
          "hang_timeout_secs", 300, "Stop the job (and restart it, with --max_restarts) "
          "when a training task of a local job makes no progress for this long, or a "
          "process of any task is stopped (SIGSTOP, a debugger) this long; 0 never does.",
          lower_bound=0, flag_values=f),
      startup_timeout_secs=flags.DEFINE_integer(
          "startup_timeout_secs", 120, "A training task that has not started training this "
          "long after it started exits, naming its phase and the peers that do not answer "
          "(and the job stops, or restarts with --max_restarts); 0 never does.",
          lower_bound=0, flag_values=f),
      shutdown_timeout_secs=flags.DEFINE_integer(
          "shutdown_timeout_secs", 300, "After training ends, seconds ps and evaluator tasks "
          "get to exit.", lower_bound=1, flag_values=f),
      progress_secs=flags.DEFINE_float(
          "progress_secs", 30, "Every this many seconds, a local job's launcher prints how "
          "far training is: step of the last, steps and examples per second, ETA, the "
          "slowest task, the latest evaluation; 0 never does.", lower_bound=0.0,
          flag_values=f),
      curves=flags.DEFINE_bool(
          "curves", True, "When the job ends, draw model_dir/curves.png: loss, eval metrics "
          "and training rate against the step (matplotlib).", flag_values=f),
      mlflow_tracking_uri=flags.DEFINE_string(
          "mlflow_tracking_uri", None, "Record the job as a run of this MLflow tracking "
          "server (http://host:5000): the program's flags, evaluations, throughput, summary "
          "and exports (pip install 'estimator_dist[tracking]').", flag_values=f),
      preemption_grace_secs=flags.DEFINE_float(
          "preemption_grace_secs", task_env.DEFAULT_PREEMPTION_GRACE_SECS,
          "SIGTERM or SIGUSR1 to the launcher or a task preempts the job: every task stops "
          "at one agreed step, the chief saves a checkpoint there, and the launcher exits "
          f"with code {errors.PREEMPTED_EXIT_CODE}; running the same command again resumes "
          "from it. The tasks get this long, then (or at a second signal) they are stopped "
          "at once. 0: those signals stop the job at once, as Ctrl-C does.",
          lower_bound=0.0, flag_values=f))


def main(argv, launch_flags):
  try:
    job = launch_flags.job.job(argv[1:])
    return launcher.launch(job, options=launch_flags.options())
  except errors.ConfigError as e:
    sys.stderr.write(f"estimator_dist.launch: {e}\n")
    return 2
  finally:
    # Everything is stopped and removed: one more Ctrl-C changes nothing, nor the exit code.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _exit_on_signal(signum, _):
  sys.exit(128 + signum)


def run():
  launch_flags = define_flags()
  # Ctrl-C before the job starts ends the launcher as Ctrl-C during the job does: exit
  # code 130, no traceback.
  signal.signal(signal.SIGINT, _exit_on_signal)
  command_line.run(lambda argv: main(argv, launch_flags))


if __name__ == "__main__":
  run()
