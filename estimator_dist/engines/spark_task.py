"""What a Spark task of `engines.spark` runs on its executor: the job's function (pickled)
or program, in a new Python process, which starts TensorFlow fresh and dies with the
Spark task; its result, or its failure in the Spark job's error."""

import os
import sys
import tempfile

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import rounds
from estimator_dist.instrument import launching
from estimator_dist.supervision import processes


def run_in_new_process(payload, name, extra_env, command=None, *, peers_wait=False):
  """Runs the pickled function of no arguments (or `command`, a program: its result is
  None) in a new Python process; returns its result.

  A new process starts TensorFlow fresh (a strategy can be set up once per process), and
  it dies with the Spark task that started it. `peers_wait`: no engine ends its peers when
  it fails (horovod.spark.run's ranks), so a failed exit is said in the job's mailbox,
  where a peer waiting for its round reads it (`rounds.exited`).
  """
  with tempfile.TemporaryDirectory(prefix="estimator_dist_spark_") as workdir:
    call, result = os.path.join(workdir, "call"), os.path.join(workdir, "result")
    if command is None:
      with open(call, "wb") as f:
        f.write(payload)
      command = [sys.executable, "-c", "import sys; from estimator_dist.engines import "
                 "spark_task; spark_task.call_pickled(sys.argv[1], sys.argv[2])", call, result]
    task = processes.Task(name, list(command), processes.child_env(**extra_env), sys.stderr)
    try:
      code = task.process.wait()
    finally:
      task.stop()  # Waits for the output, and stops anything the task left running.
    mailbox = mailbox_lib.Mailbox.of_environment(extra_env)
    if code != 0 and peers_wait:
      rounds.exited(mailbox, name, code)
    # 200 is a preemption when the toolkit said so: a program's own 200 is its failure.
    if code == errors.PREEMPTED_EXIT_CODE and (mailbox is None or
                                               mailbox_lib.preempted(mailbox)):
      raise RuntimeError(command_line.line(
          f"task {name} was preempted: every task stopped at one step and the chief saved a "
          f"checkpoint there. A Spark that retries a failed stage (spark.task.maxFailures "
          f"above 1) runs it again from that checkpoint; else run the job again with the "
          f"same model_dir to resume"))
    if code != 0:
      raise RuntimeError(command_line.line(f"task {name} exited with code {code}; its last "
                                           f"lines:\n") + "\n".join(task.tail))
    if not os.path.exists(result):
      return None  # A program's: it exited 0.
    from pyspark import cloudpickle  # pylint: disable=g-import-not-at-top
    with open(result, "rb") as f:
      return cloudpickle.load(f)


def say_started(mailbox, name):
  """Says in the job's `mailbox` (None: none seen here) that task `name` started."""
  try:
    if mailbox:
      mailbox.post(mailbox_lib.REACHED, name, True)
  except OSError:
    pass  # Seen, not writable here: the driver checks only the tasks that said so.


def run_program_rank(command):
  """The function `horovod.spark.run` runs for a program file: the program as this rank,
  in a new process that inherits the rank's Horovod variables (its Gloo rendezvous),
  instrumented as its executor sees it. It says in the job's mailbox that it started, as
  a barrier stage's task does."""
  task = cluster_lib.from_horovod_environment(os.environ)
  name = task.name if task else "worker:?"
  env = dict(os.environ)
  say_started(mailbox_lib.Mailbox.of_environment(env), name)
  program = launching.instrumented(command)
  if program:
    env = launching.task_env(env, program)
  return run_in_new_process(None, name, env, command=command, peers_wait=True)


def call_pickled(call_path, result_path):
  """Runs the pickled function of `call_path`; pickles its result to `result_path`."""
  from pyspark import cloudpickle  # pylint: disable=g-import-not-at-top
  with open(call_path, "rb") as f:
    fn = cloudpickle.load(f)
  value = fn()
  with open(result_path, "wb") as f:
    cloudpickle.dump(value, f)
