"""Spark: real training through estimator_dist.engines.spark, on pyspark in local[N] mode and
on a Spark standalone cluster (a master and a worker the tests start); and the job value
its call form builds, checked before Spark starts."""

import contextlib
import glob
import json
import os
import re
import time

import psutil
import pytest

from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.engines import spark
from estimator_dist.engines import spark_mailbox
from estimator_dist.jobs import spec
from tests import helpers
from tests import spark_cluster

HOROVOD_EXAMPLE = "tests.programs.upstream.tensorflow_mnist_estimator"


def spark_train(*args, timeout=400):
  return helpers.run([helpers.PYTHON, "-m", "tests.programs.spark_train", *args],
                      timeout=timeout)


def results(output):
  lines = [line for line in output.splitlines() if line.startswith("RESULTS ")]
  assert len(lines) == 1, output[-5000:]
  return json.loads(lines[0][len("RESULTS "):])


def test_the_call_form_is_the_job_value_and_sparks_options(monkeypatch):
  calls = []
  monkeypatch.setattr(spark, "run_job", lambda job, train_fn, *, options: calls.append(
      (job, train_fn(), options)))
  spark.run(lambda a, b: a + b, num_workers=3, strategy="parameter_server", args=(1,),
            kwargs={"b": 2}, horovod_controller="mpi", env={"X": "1"})
  assert calls == [(spec.JobSpec(strategy="parameter_server", num_workers=3,
                                 command=spark.FUNCTION_COMMAND), 3,
                    spark.SparkOptions(horovod_controller="mpi", env={"X": "1"}))]


def test_the_driver_checks_the_tasks_that_reached_the_mailbox(tmp_path, capsys):
  """A task whose executor does not share the model_dir is named, not failed; one that
  reached it and never joined fails the job."""
  mailbox = mailbox_lib.Mailbox(str(tmp_path / "mailbox")).emptied()
  job = spec.JobSpec(strategy="multi_worker", num_workers=2, command=spark.FUNCTION_COMMAND)
  mailbox.post(mailbox_lib.REACHED, "chief:0", True)
  mailbox.post(mailbox_lib.JOINED, "chief:0", {"strategy": "multi_worker", "size": 2})
  mailbox.post(mailbox_lib.SUMMARY, mailbox_lib.CHIEF, {"steps": 20})
  spark_mailbox.check_end(mailbox, job)
  assert capsys.readouterr().err == (
      "estimator-dist: worker:0 did not reach the job's mailbox in the model_dir (their "
      "executors do not share it): whether they joined the job's strategy is not checked\n")
  mailbox.post(mailbox_lib.REACHED, "worker:0", True)
  with pytest.raises(RuntimeError, match="worker:0 never started the job's strategy"):
    spark_mailbox.check_end(mailbox, job)
  spark_mailbox.check_end(None, job)  # No mailbox (no model_dir): nothing to check.


def test_a_program_is_a_list_and_one_that_is_instrumented_needs_a_model_dir():
  """Refused before Spark starts."""
  with pytest.raises(errors.ConfigError, match=r"shlex.split\('python train.py'\)"):
    spark.run_program("python train.py", num_workers=2, strategy="multi_worker")
  program = ["python", os.path.join(helpers.REPO, "tests", "programs", "upstream",
                                    "premade_estimator.py")]
  for model_dir, strategy in ((None, "multi_worker"), ("gs://bucket/run", "multi_worker"),
                              (None, "horovod")):
    with pytest.raises(errors.ConfigError, match="give model_dir, a path the driver and "):
      spark.run_program(program, num_workers=2, strategy=strategy, model_dir=model_dir)
  with pytest.raises(errors.ConfigError, match="under horovod with horovod_controller='gloo'"):
    spark.run_program(program, num_workers=2, strategy="horovod", model_dir="/m",
                      horovod_controller="mpi")


def test_a_job_spark_cannot_run_is_refused_before_spark_starts():
  with pytest.raises(errors.ConfigError, match="num_ps=1 applies only to"):
    spark.run(print, num_workers=2, strategy="multi_worker", num_ps=1)
  with pytest.raises(errors.ConfigError, match="horovod_controller"):
    spark.run(print, num_workers=2, strategy="horovod", horovod_controller="tcp")
  with pytest.raises(errors.ConfigError, match="network_interface applies to strategy horovod"):
    spark.run(print, num_workers=2, strategy="multi_worker", network_interface="eth1")


@pytest.mark.processes
def test_chief_worker_and_ps_train_through_spark_in_local_mode(tmp_path):
  # Three tasks at once need three slots. The ps exits by itself, which lets the barrier
  # stage end.
  code, output = spark_train("--strategy=parameter_server", "--num_workers=2",
                             "--spark_slots=3", f"--model_dir={tmp_path}", "--train_steps=300",
                             "--progress_secs=0.5", "--spoil_summary")
  assert code == 0, output[-5000:]
  # What the chief's program left for the summary record (bytes that are no text) is read
  # warily, as the local launcher reads it: one line, and the job's results stand.
  warnings = [line for line in output.splitlines() if "summary record" in line]
  assert len(warnings) == 1 and warnings[0].startswith(
      "estimator-dist: the summary record in ") and "it is not UTF-8 text" in warnings[0], (
          warnings)
  # The driver says how far the tasks are, from their heartbeats in the model_dir, and
  # removes them after.
  steps = [int(s) for s in re.findall(r"^estimator-dist progress: step (\d+)/300 ", output,
                                      re.MULTILINE)]
  assert steps and steps == sorted(steps) and steps[-1] >= 300, steps
  assert not list((tmp_path / "estimator_dist").glob("mailbox-*"))
  chief, *others = results(output)
  # The bar of the launcher's tests (tests/integration_test.py).
  assert chief["global_step"] >= 300 and chief["accuracy"] >= 0.90, chief
  assert others == [None, None]
  found = helpers.summaries(output)
  assert len(found) == 1 and (found[0]["workers"], found[0]["replicas"]) == ("2", "2")


@pytest.mark.processes
def test_a_failing_task_fails_the_spark_job_and_stops_the_others(tmp_path):
  code, output = spark_train("--strategy=multi_worker", "--num_workers=2",
                             f"--model_dir={tmp_path}", "--fail_worker", timeout=180)
  assert code != 0
  assert ("RuntimeError: estimator-dist: the Spark job failed: estimator-dist: task "
          "worker:0 exited with code 1: ValueError: this worker fails on purpose\n") in output, output[-5000:]
  assert "ValueError: this worker fails on purpose" in output


@pytest.mark.processes
def test_a_stopped_task_is_a_hang_the_driver_ends(tmp_path):
  """A worker stopped (SIGSTOP) once it beats: alive, no progress, and its peer waits on
  it. Spark never ends a barrier stage that waits: the driver's watcher of the beats says
  so and cancels the job, and no training process is left. Or the chief ends first:
  TensorFlow's coordination service misses the worker's heartbeats and aborts the
  chief's collectives, which then stops on the lost peer (peer_loss), naming it."""
  code, output = spark_train("--strategy=multi_worker", "--num_workers=2",
                             f"--model_dir={tmp_path}", "--train_steps=100000",
                             "--stop_worker", "--hang_timeout_secs=10", timeout=240)
  assert code != 0, output[-5000:]
  line = re.search(r"^estimator-dist progress: no training progress on (chief:0, )?worker:0 "
                   rf"for 10s \(heartbeat; last beat: (chief:0 {helpers.LAST_BEAT}, )?worker:0 "
                   rf"{helpers.LAST_BEAT}\); stopping the job$", output, re.M)
  if line:
    assert (f"RuntimeError: estimator-dist: the Spark job was stopped: "
            f"{line[0].split(': ', 1)[1].split('; stopping')[0]}") in output, output[-5000:]
  else:
    assert re.search(r"task chief:0 exited with code 1: .*chief:0 stopped on an error from a "
                     r"peer or a service during training \(UnavailableError: .*"
                     r"/job:worker/replica:0/task:0 heartbeat timeout", output), output[-5000:]

  def tasks():  # The job's: their mailbox is in its model_dir.
    found = []
    for p in helpers.our_processes():
      with contextlib.suppress(psutil.Error):
        if str(tmp_path) in p.environ().get(env_vars.MAILBOX, ""):
          found.append(p)
    return found
  assert helpers.wait_until_gone(tasks, timeout=20) == []


@pytest.mark.processes
def test_a_function_that_trains_alone_on_every_task_fails_the_job(tmp_path):
  """Each task exits 0 having trained on its own: the job did not train together, and
  the driver says so, as the local launcher and SLURM's script do."""
  code, output = spark_train("--strategy=multi_worker", "--num_workers=2", "--alone",
                             f"--model_dir={tmp_path}", "--train_steps=20", timeout=180)
  assert code != 0, output[-5000:]
  assert ("RuntimeError: estimator-dist: the Spark job failed: every task exited 0, but the "
          "job did not train together under multi_worker: chief:0 never started the job's "
          "strategy; worker:0 never started the job's strategy.") in output, output[-5000:]


@pytest.mark.processes
def test_an_unmodified_program_trains_distributed_through_spark(tmp_path):
  """TensorFlow's premade-Estimator tutorial, which never imports estimator_dist, run by
  `spark.run_program` as the tasks of multi_worker: instrumented on each executor as the
  local launcher's and SLURM's tasks are, agreeing on its rounds through the job's
  mailbox, checked to have joined, and trained in the job's model_dir."""
  code, output = spark_train("--strategy=multi_worker", "--num_workers=2",
                             f"--program={helpers.PYTHON} -m "
                             "tests.programs.upstream.premade_estimator",
                             f"--model_dir={tmp_path}", timeout=400)
  assert code == 0, output[-5000:]
  assert results(output) == [None, None]
  helpers.check_premade_trained_together(output)
  assert glob.glob(str(tmp_path / "model.ckpt-5000.index")), os.listdir(tmp_path)


@pytest.mark.processes
def test_a_horovod_program_file_trains_through_spark_as_it_is(tmp_path):
  """Horovod's own Estimator example, which calls hvd.init() itself, run by
  `spark.run_program` under horovod: each rank of horovod.spark.run starts it instrumented
  in a process of its own, which joins Gloo's rendezvous as that rank."""
  code, output = helpers.run(
      [helpers.PYTHON, "-m", "tests.programs.spark_train", "--strategy=horovod",
       "--num_workers=2", f"--program={helpers.PYTHON} -m {HOROVOD_EXAMPLE}",
       f"--model_dir={tmp_path / 'job'}"], timeout=300, cwd=str(tmp_path))
  assert code == 0, output[-5000:]
  assert results(output) == [None, None]
  summary, = helpers.summaries(output)
  assert (summary["workers"], summary["steps"]) == ("2", "50"), summary  # 100 // hvd.size()
  printed = [line.split("] ", 2)[-1] for line in output.splitlines()
             if "{'accuracy': " in line]  # Each rank prints the chief's evaluation.
  assert len(printed) == 2 and printed[0] == printed[1], printed
  assert (tmp_path / "mnist_convnet_model" / "checkpoint").exists()  # Its own model_dir.


@pytest.mark.processes
def test_more_tasks_than_spark_slots_is_refused_at_once(tmp_path):
  code, output = spark_train("--strategy=parameter_server", "--num_workers=2",
                             f"--model_dir={tmp_path}", timeout=180)
  assert code != 0
  assert ("strategy 'parameter_server' with 2 worker(s), 1 ps and 0 evaluator runs 3 Spark "
          "tasks at once, but this Spark context has 2 task slots. Give it at least 3 "
          "(local[3], or more executors or cores).") in output


@pytest.fixture(scope="module")
def standalone():
  with spark_cluster.running() as cluster:
    yield cluster


class TrainingSockets(helpers.Sampler):
  """Every socket a training process of the cluster (a TensorFlow task, a Horovod rank)
  listens on while a job runs: `found`."""

  def __init__(self, cluster):
    super().__init__()
    self.cluster, self.found = cluster, set()

  def sample(self):
    for p in self.cluster.processes():
      with contextlib.suppress(psutil.Error):
        if "exec_fn" in " ".join(p.cmdline()) or "TF_CONFIG" in p.environ():
          self.found |= helpers.listening(p)


@pytest.mark.processes
@pytest.mark.xdist_group("spark_standalone")  # One cluster: in one process of the suite.
@pytest.mark.parametrize("strategy,args", [
    ("multi_worker", []),
    # MPI's ranks listen on every interface unless bound to the executors' network.
    ("horovod", ["--horovod_controller=mpi", "--network_interface=lo"]),
])
def test_a_model_trains_on_a_spark_standalone_cluster(standalone, strategy, args, tmp_path):
  before = standalone.executor_output()
  with TrainingSockets(standalone) as sockets:
    job = helpers.Job(command=[helpers.PYTHON, "-m", "tests.programs.spark_train",
                               f"--strategy={strategy}", "--num_workers=2",
                               f"--spark_master={standalone.master}",
                               f"--model_dir={tmp_path}", "--train_steps=300", *args])
    try:
      code = job.wait(timeout=400)
    finally:
      job.kill()
  output = job.output
  assert code == 0, output[-5000:]
  seen = {ip for ip, _ in sockets.found}
  assert seen and seen <= {"127.0.0.1", "::ffff:127.0.0.1", "::1"}, seen
  chief, *others = results(output)
  assert chief["global_step"] >= 300 and chief["accuracy"] >= 0.90, chief
  assert others == [None]
  # The driver said where training ended (Horovod's ranks too beat in the model_dir).
  assert re.search(r"^estimator-dist progress: step 30\d/300 \(100 %\)", output, re.MULTILINE)
  # The tasks ran in the executors the worker started: their output has the summary (MPI's
  # ranks print through mpirun, which runs in the driver).
  apps = {app: text for app, text in standalone.executor_output().items() if app not in before}
  assert len(apps) == 1, sorted(apps)
  found = helpers.summaries(output if strategy == "horovod" else next(iter(apps.values())))
  assert len(found) == 1 and (found[0]["workers"], found[0]["replicas"]) == ("2", "2")
  assert helpers.wait_until_gone(standalone.processes) == []


@pytest.mark.processes
@pytest.mark.xdist_group("spark_standalone")
def test_a_killed_executor_fails_the_job_and_leaves_no_training_process(standalone, tmp_path):
  job = helpers.Job(command=[helpers.PYTHON, "-m", "tests.programs.spark_train",
                             "--strategy=multi_worker", "--num_workers=2",
                             f"--spark_master={standalone.master}", f"--model_dir={tmp_path}",
                             "--train_steps=100000"])
  try:
    deadline = time.monotonic() + 240
    while not glob.glob(str(tmp_path / "model.ckpt-*.index")):
      assert job.process.poll() is None and time.monotonic() < deadline, job.output[-5000:]
      time.sleep(0.2)
    executors = standalone.executors()
    assert len(executors) == 1, [p.cmdline() for p in standalone.processes()]
    executors[0].kill()
    code = job.wait(timeout=120)
  finally:
    job.kill()
  assert code != 0
  assert ("RuntimeError: estimator-dist: the Spark job failed: ExecutorLostFailure "
          "(executor 0 exited caused by one of the running tasks) Reason: Command exited with "
          "code 137; Spark stopped every task, and the model_dir keeps the checkpoints, so "
          "running the job again resumes training") in job.output, job.output[-5000:]
  assert helpers.wait_until_gone(standalone.processes) == []
