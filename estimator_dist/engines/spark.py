"""Spark: train on a Spark cluster's executors, the TensorFlowOnSpark way.

  from estimator_dist.engines import spark
  from estimator_dist.jobs import spec
  results = spark.run(train_fn, num_workers=4, strategy="multi_worker")
  # The same as values: the JobSpec every engine takes, and Spark's own options.
  job = spec.JobSpec(strategy="multi_worker", num_workers=4, command=spark.FUNCTION_COMMAND)
  results = spark.run_job(job, train_fn, options=spark.SparkOptions(spark_context=sc))

For the tf.distribute strategies one barrier stage starts every task at once. Each
task picks a free port on its executor, the tasks exchange their addresses with
`BarrierTaskContext.allGather`, and each runs `train_fn` in a new Python process with
its TF_CONFIG: chief, evaluator, ps, then workers, in partition order. Horovod goes
through `horovod.spark.run`. `train_fn` calls `estimator_dist.train_and_evaluate` with
the same strategy and a model_dir every executor can reach.

Given that model_dir (`SparkOptions.model_dir`), the driver prints the progress lines of
`estimator-dist progress` (`estimator-dist progress: step 1200/2000 (60 %), ...`) every
`progress_secs`: the tasks beat in a directory of it, and a thread of the driver reads them.
There too each task says it started, and the job fails when a task of a distributed job
never started its strategy (a function that ignores the cluster trains alone on every
task), as under the local launcher and SLURM.
"""

import dataclasses
import functools
import logging
import os
import types
import uuid
from typing import Any, Mapping, Optional

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import task_env
from estimator_dist.engines import spark_mailbox
from estimator_dist.engines import spark_task
from estimator_dist.instrument import launching
from estimator_dist.jobs import horovodrun
from estimator_dist.jobs import spec
from estimator_dist.supervision import local_cluster
from estimator_dist.watching import progress_watch

# The command of a JobSpec whose tasks run a function: a JobSpec needs one, Spark runs none.
FUNCTION_COMMAND = ("<train_fn>",)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SparkOptions:
  """How Spark runs a job's tasks.

  spark_context: the SparkContext whose executors run them (default: the one
    `SparkContext.getOrCreate()` gives).
  horovod_controller: how `horovod.spark.run` connects the ranks: "gloo" or "mpi".
  network_interface: horovod: the interface of the executors' private network, under one
    name on each; Gloo, MPI and the ranks listen there only (default: Horovod picks the
    interfaces every executor shares, and the ranks listen on every interface).
  env: environment variables every task gets on top of its executor's.
  model_dir: the model_dir `train_fn` trains in, when the driver reaches it at this path
    too: the driver makes the job's mailbox there (contract/mailbox.py) and prints
    progress lines from the tasks' beats in it (none when the executors' tasks do not see
    it: they have no mailbox then).
  progress_secs: a progress line this often; 0: none.
  hang_timeout_secs: when a training task's heartbeat (in model_dir's mailbox) stops this
    long, the driver says so and cancels the Spark job, which Spark alone never does to
    a barrier stage; 0: never.
  """
  spark_context: Optional[Any] = None
  horovod_controller: str = "gloo"
  network_interface: Optional[str] = None
  env: Mapping[str, str] = dataclasses.field(default_factory=dict)
  model_dir: Optional[str] = None
  progress_secs: float = 30
  hang_timeout_secs: float = 300

  def __post_init__(self):
    errors.check_choice("horovod_controller", self.horovod_controller,
                        horovodrun.CONTROLLERS[1:])
    for name in ("progress_secs", "hang_timeout_secs"):
      if getattr(self, name) < 0:
        raise errors.ConfigError(f"{name} is {getattr(self, name):g}: give a number of "
                                 f"seconds, or 0 for none.")
    object.__setattr__(self, "env", types.MappingProxyType(dict(self.env or {})))


def pyspark_modules():
  try:
    import pyspark  # pylint: disable=g-import-not-at-top
    from pyspark import cloudpickle  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(f"estimator_dist.engines.spark needs pyspark 3.5 ({e}); install "
                      f"estimator_dist[spark].") from None
  return pyspark, cloudpickle


def run(train_fn, *, num_workers, strategy, num_ps=None, evaluator=False, args=(),
        kwargs=None, **options):
  """Runs `train_fn(*args, **kwargs)` as the tasks of `strategy` on Spark's executors.

  The job's fields as keywords (see `spec.JobSpec`), and `options` as `SparkOptions`'
  fields (spark_context, horovod_controller, network_interface, env, model_dir,
  progress_secs); see `run_job`.
  """
  job = spec.JobSpec(strategy=strategy, num_workers=num_workers, num_ps=num_ps,
                     evaluator=evaluator, command=FUNCTION_COMMAND)
  return run_job(job, functools.partial(train_fn, *args, **(kwargs or {})),
                 options=SparkOptions(**options))


def run_program(command, *, num_workers, strategy, num_ps=None, evaluator=False, **options):
  """Runs the program `command` (`["python", "train.py", ...]`), as it is, as the tasks of
  `strategy` on Spark's executors, instrumented as the local launcher's tasks are; a
  relative program file is the driver's. Trains in `options["model_dir"]` unless the
  program names its own. None for each task (they exited 0)."""
  if isinstance(command, str):
    raise errors.ConfigError(f"give the program as a list of words, e.g. "
                             f"shlex.split({command!r}), not one string")
  command = list(command)
  if len(command) > 1 and command[1].endswith(".py") and os.path.isfile(command[1]):
    command[1] = os.path.abspath(command[1])
  model_dir = options.get("model_dir")
  if model_dir and not checkpoint_names.is_url(model_dir):
    options["model_dir"] = os.path.abspath(model_dir)  # The driver's, as the program's.
  job = spec.JobSpec(strategy=strategy, num_workers=num_workers, num_ps=num_ps,
                     evaluator=evaluator, command=command)
  return run_job(job, None, options=SparkOptions(**options))


def run_job(job, train_fn, *, options=SparkOptions()):
  """Runs `train_fn()` as the tasks of `job` (a `spec.JobSpec`) on Spark's executors.

  Every task runs `train_fn` (give it arguments with functools.partial); without one,
  `job.command` (`run_program`). Returns the tasks' return values: by rank for horovod,
  else in task order (chief first, then evaluator, ps and workers). A failing task fails
  the Spark job, which stops every other task.
  """
  strategy, num_workers, num_ps, num_tasks = (job.strategy, job.num_workers, job.num_ps,
                                              job.num_tasks)
  no_mailbox = not options.model_dir or checkpoint_names.is_url(options.model_dir)
  if train_fn is None and no_mailbox and launching.instrumented(job.command):
    raise errors.ConfigError(
        "a program that does not import estimator_dist agrees on its train and evaluate "
        "calls through the job's mailbox, in its model_dir: give model_dir, a path the "
        "driver and every executor reach (not a URL)")
  if train_fn is None and job.traits.ranks_from_horovodrun:
    if options.horovod_controller != "gloo":
      raise errors.ConfigError(
          "a program file runs on Spark under horovod with horovod_controller='gloo': each "
          "rank starts the program in a process of its own, which joins Gloo's rendezvous "
          "but not an MPI job's; or give spark.run the function that trains.")
    train_fn = functools.partial(spark_task.run_program_rank, job.command)
  if options.network_interface and not job.traits.ranks_from_horovodrun:
    raise errors.ConfigError(
        f"network_interface applies to strategy horovod; {strategy}'s tasks listen on the "
        f"address their cluster names (their executor's) already.")
  pyspark, cloudpickle = pyspark_modules()
  logging.getLogger("py4j").setLevel(logging.WARNING)  # Its INFO lines bury the training's.
  sc = options.spark_context or pyspark.SparkContext.getOrCreate()
  slots = sc.defaultParallelism
  if not job.traits.ranks_from_horovodrun and slots < num_tasks:
    raise errors.ConfigError(
        f"strategy {strategy!r} with {num_workers} worker(s), {num_ps} ps and "
        f"{int(job.evaluator)} evaluator runs {num_tasks} Spark tasks at once, but this Spark "
        f"context has {slots} task slots. Give it at least {num_tasks} (local[{num_tasks}], "
        f"or more executors or cores).")
  # A hang cancels the job's Spark jobs: those of its tag (horovod.spark.run's own thread
  # starts them for horovod, untagged: then every job of the context).
  tag = f"estimator_dist-{uuid.uuid4().hex[:12]}"
  cancel = (sc.cancelAllJobs if job.traits.ranks_from_horovodrun else
            functools.partial(sc.cancelJobsWithTag, tag))
  with spark_mailbox.made(options.model_dir, sc.applicationId,
                          progress_secs=options.progress_secs,
                          hang_timeout_secs=options.hang_timeout_secs,
                          on_hang=cancel) as mailbox:
    env = task_environment(job, options, mailbox=mailbox)
    sc.addJobTag(tag)
    try:
      if job.traits.ranks_from_horovodrun:  # horovod.spark.run starts and numbers the ranks.
        results = _run_horovod(train_fn, job, options, env)
      else:
        results = _run_barrier_stage(pyspark, cloudpickle, sc, train_fn, job, env)
    except Exception:
      why = mailbox and progress_watch.hang_of(mailbox)
      if why:  # The driver's watcher cancelled the Spark jobs: their trace says no more.
        raise RuntimeError(command_line.line(f"the Spark job was stopped: {why}")) from None
      raise
    finally:
      sc.removeJobTag(tag)
    spark_mailbox.check_end(mailbox, job)
    return results


def task_environment(job, options, *, mailbox=None):
  """The variables every task of `job` gets on top of its executor's: the job's
  (`task_env.task_environment`; the preemption grace at its default, which
  `options.env` may change like any other), `options.env`, and the job's `mailbox` (a
  Mailbox), if it has one."""
  job_wide = task_env.task_environment(
      job=job, preemption_grace_secs=task_env.DEFAULT_PREEMPTION_GRACE_SECS,
      model_dir=None if job.command == FUNCTION_COMMAND else options.model_dir)
  return {**job_wide, **options.env,
          **task_env.task_environment(mailbox=mailbox and mailbox.directory)}


def _run_barrier_stage(pyspark, cloudpickle, sc, train_fn, job, extra):
  """The tf.distribute strategies: one barrier stage, a task per partition."""
  num_ps, num_tasks = job.num_ps, job.num_tasks
  payload = cloudpickle.dumps(train_fn) if train_fn is not None else None

  def task(_):
    context = pyspark.BarrierTaskContext.get()
    partition = context.partitionId()
    host = context.getTaskInfos()[partition].address.rpartition(":")[0] or "127.0.0.1"
    addresses = context.allGather(f"{host}:{local_cluster.free_ports(1, host=host)[0]}")
    env = dict(extra)
    if num_tasks > 1:
      cluster, roles = cluster_lib.assign_roles(addresses, num_ps, job.evaluator,
                                                source="Spark")
      role, index = roles[partition]
      env["TF_CONFIG"] = cluster_lib.tf_config(cluster, role, index)
    else:
      role, index = "chief", 0
    spark_task.say_started(mailbox_lib.Mailbox.of_environment(env), f"{role}:{index}")
    program = payload is None and launching.instrumented(job.command)  # As this node sees it.
    if program:  # Before the executor's own PYTHONPATH (Spark's, --py-files').
      env = launching.task_env({**os.environ, **env}, program)
    yield partition, spark_task.run_in_new_process(payload, f"{role}:{index}", env,
                                         command=job.command if payload is None else None)

  from py4j.protocol import Py4JJavaError  # pylint: disable=g-import-not-at-top
  try:
    results = (sc.parallelize(range(num_tasks), num_tasks).barrier()
               .mapPartitions(task).collect())
  except Py4JJavaError as e:
    raise RuntimeError(command_line.line(f"the Spark job failed: {_failure(e)}")) from e
  return [result for _, result in sorted(results, key=lambda r: r[0])]


# How a task's failure reads in the Spark job's error (its RuntimeError, in the executor's).
_TASK_FAILED = "RuntimeError: " + command_line.line("task ")


def _failure(error):
  """Why a Spark job failed, in a line: a task's exit and its last line, or a lost
  executor (then training resumes when the job runs again), else Spark's first line."""
  try:
    message = str(error.java_exception.getMessage())
  except Exception:  # pylint: disable=broad-except  # The JVM may be gone.
    message = str(error)
  lines = [line.strip() for line in message.split("Driver stacktrace:")[0].splitlines()
           if line.strip()]
  for index, line in enumerate(lines):
    if _TASK_FAILED in line:
      if " was preempted: " in line:
        return line.split("RuntimeError: ")[-1]
      tail = [t for t in lines[index + 1:] if not t.startswith("at ")]
      last = f": {tail[-1]}" if tail else ""
      return line.split("RuntimeError: ")[-1].split("; its last lines")[0] + last
  resume = ("; Spark stopped every task, and the model_dir keeps the checkpoints, so running "
            "the job again resumes training")
  for line in lines:
    if "ExecutorLostFailure" in line:
      return line + resume
  return lines[0] if lines else message


def _run_horovod(train_fn, job, options, variables):
  """Horovod's own Spark runner: one rank per Spark task, all-reduce over Gloo or MPI."""
  import horovod.spark  # pylint: disable=g-import-not-at-top
  controller, interface = options.horovod_controller, options.network_interface
  env = {**os.environ, **variables}
  if interface:
    env = horovodrun.across_hosts_env(env, interface)
  return horovod.spark.run(train_fn, num_proc=job.num_workers, env=env,
                           nics={interface} if interface else None,
                           use_gloo=controller == "gloo", use_mpi=controller == "mpi")

