"""A sweep on Spark: each trial a Spark job, the study on the driver.

  estimator-dist sweep --engine=spark --spark_master=spark://host:7077 --parallel=4 \\
      --strategy=multi_worker --workers_per_trial=2 --sweep_dir=/shared/sweep ... -- PROGRAM

The driver runs the sweep's runner; each trial is one barrier stage of
`estimator_dist.engines.spark.run_job` (one Spark task per process of the trial's job, started
together, TF_CONFIG from their addresses), in which every task runs the program with the
trial's flags. `--parallel` trials run at once as concurrent Spark jobs. The program's
evaluations reach the study through the model_dir, which every executor and the driver
must reach (a shared file system). A failing task fails its stage, which stops the other
tasks of that trial; a pruned or interrupted trial's stage is cancelled.
"""

import functools
import os
import re
import subprocess
import sys
import threading

from estimator_dist.contract import process_identity
from estimator_dist.contract import task_env
from estimator_dist.engines import spark
from estimator_dist.experiments import runner
from estimator_dist.jobs import spec


def run_program(command, log_path):
  """In each Spark task of a trial: the program, with the task's TF_CONFIG."""
  with open(log_path, "ab") as log:
    code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,  # pylint: disable=subprocess-run-check
                          stdin=subprocess.DEVNULL, preexec_fn=process_identity.die_with_parent,
                          check=False).returncode
  if code:
    sys.exit(code)  # Fails the barrier stage, which stops the trial's other tasks.


class _Stage:
  """A trial's Spark job, run from a thread of the driver; answers like a Popen."""

  def __init__(self, spark_context, group, run):
    self.returncode = None
    self._sc, self._group = spark_context, group
    self._thread = threading.Thread(target=self._run, args=(run,), daemon=True)
    self._thread.start()

  def _run(self, run):
    self._sc.setJobGroup(self._group, self._group, interruptOnCancel=True)
    try:
      run()
      self.returncode = 0
    except Exception as e:  # pylint: disable=broad-except
      # engines.spark names the exit code of the task that failed the stage.
      code = re.search(r"exited with code (\d+)", str(e))
      self.returncode = int(code.group(1)) if code else 1

  def poll(self):
    return self.returncode

  def terminate(self):
    self._sc.cancelJobGroup(self._group)

  kill = terminate

  def wait(self, timeout=None):
    self._thread.join(timeout)
    if self._thread.is_alive():
      raise subprocess.TimeoutExpired(self._group, timeout)
    return self.returncode


class SparkSlot:
  """Runs a trial's job as a barrier stage of `spark_context`."""

  def __init__(self, spark_context, options, index):
    self._sc, self._options, self._index = spark_context, options, index

  def __str__(self):
    return f"Spark (slot {self._index})"

  def start(self, program, *, model_dir, log, env, curves=True):
    del curves  # Drawn by the launcher, which a stage does not run.
    job = spec.JobSpec(strategy=self._options.strategy,
                       num_workers=self._options.workers_per_trial,
                       command=[*program, f"--model_dir={model_dir}"])
    log.write(f"{' '.join(job.command)}\n".encode())
    log.flush()
    options = spark.SparkOptions(spark_context=self._sc, env={
        name: env[name] for name in task_env.TRIAL if name in env})
    run = functools.partial(run_program, list(job.command), log.name)
    return _Stage(self._sc, f"estimator_dist {os.path.basename(model_dir)}",
                  lambda: spark.run_job(job, run, options=options))


def context(master=None):
  """A SparkContext: `master` (local[N], spark://...), else the one spark-submit gives."""
  pyspark, _ = spark.pyspark_modules()
  os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # The executors' Python.
  conf = pyspark.SparkConf().setAppName("estimator_dist sweep")
  if master:
    conf.setMaster(master)
  if (master or "").startswith("local"):  # This machine only.
    conf.set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1").set(
        "spark.driver.bindAddress", "127.0.0.1")
  return pyspark.SparkContext.getOrCreate(conf)


def sweep(program, *, options, spark_context, out=sys.stdout, on_study=None):
  """Runs the sweep with `options.parallel` trials at once on Spark; see `runner.sweep`."""
  slots = [SparkSlot(spark_context, options, i) for i in range(options.parallel)]
  return runner.run(program, options=options, slots=slots, out=out, on_study=on_study)
