"""Faults, for real on 127.0.0.1: a worker killed with SIGKILL, a kill during checkpoint
writes, a loss that becomes NaN. Nothing hangs, nothing is lost beyond one checkpoint
interval, and no process is left behind (conftest checks the process table)."""

import random
import re
import signal
import time

import numpy as np
import psutil
import pytest
import tensorflow as tf

from tests import helpers

pytestmark = pytest.mark.processes

STEPS, INTERVAL = 1000, 100


def checkpoint_step(model_dir):
  path = tf.train.latest_checkpoint(model_dir)
  return int(path.rsplit("-", 1)[1]) if path else -1


def wait_for_checkpoint(model_dir, step, job, timeout=180):
  deadline = time.monotonic() + timeout
  while checkpoint_step(model_dir) < step:
    assert job.process.poll() is None, job.output[-5000:]
    assert time.monotonic() < deadline, f"no checkpoint {step}:\n{job.output[-5000:]}"
    time.sleep(0.05)


def training_process(job, strategy):
  """The non-chief worker's process: TF_CONFIG worker 0, or Horovod rank 1."""
  for p in psutil.Process(job.process.pid).children(recursive=True):
    try:
      env, command = p.environ(), p.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
      continue
    if command[1:3] != ["-m", "tests.programs.plain_model"]:
      continue  # nsenter starts the task in the job's namespaces; horovodrun's Gloo a
      # shell, and a copy of horovodrun that watches it: the task is their child.
    if strategy == "horovod" and "1" in (env.get("HOROVOD_RANK"),
                                         env.get("OMPI_COMM_WORLD_RANK")):
      return p
    if '"task": {"type": "worker", "index": 0}' in env.get("TF_CONFIG", ""):
      return p
  raise AssertionError("no worker process found")


def restorable(model_dir):
  """Reads every tensor of the latest checkpoint; returns its step."""
  reader = tf.train.load_checkpoint(model_dir)
  for name in reader.get_variable_to_shape_map():
    assert np.all(np.isfinite(reader.get_tensor(name))) or name == "global_step"
  return int(reader.get_tensor("global_step"))


def signal_a_worker(model_dir, strategy, sig, *launch_args):
  """Runs a restartable job and sends `sig` to a worker once checkpoint 200 exists.

  Returns (the job once ended, its exit code, when the signal was sent, the latest
  checkpoint step then).
  """
  job = helpers.Job(f"--strategy={strategy}", "--num_workers=2", "--max_restarts=1",
                    *launch_args,
                    program_args=[f"--model_dir={model_dir}", f"--train_steps={STEPS}",
                                  f"--save_checkpoints_steps={INTERVAL}",
                                  "--eval_throttle_secs=1"])
  try:
    wait_for_checkpoint(model_dir, 2 * INTERVAL, job)
    victim = training_process(job, strategy)
    sent_at, saved = time.monotonic(), checkpoint_step(model_dir)
    victim.send_signal(sig)
    code = job.wait(timeout=400)
  finally:
    job.kill()
  return job, code, sent_at, saved


# multi_worker's killed worker: in the heartbeat test below, one job for both faults.
# Under Gloo, horovodrun does not end the other ranks when one is killed, unless the
# other rank's all-reduce fails first: the launcher sees the rank end before its training
# did (its watchdog's companion says so), or horovodrun exit, whichever comes first.
@pytest.mark.parametrize("strategy,args,noticed_by", [
    ("horovod", [], ("exited with code",)),
    ("horovod", ["--horovod_controller=gloo"],
     ("worker:1 ended before its training did", "exited with code")),
    ("parameter_server", ["--evaluator"], ("exited with code",))])
def test_a_killed_worker_restarts_the_job_from_the_last_checkpoint(strategy, args, noticed_by,
                                                                   tmp_path):
  model_dir = str(tmp_path)
  job, code, killed_at, saved = signal_a_worker(model_dir, strategy, signal.SIGKILL, *args)
  output = job.output
  assert code == 0, output[-5000:]
  # The launcher noticed the death and stopped the rest, within a bounded time.
  noticed, line = min((job.first(text) for text in noticed_by),
                      key=lambda found: found[0] or float("inf"))
  assert noticed is not None, output[-5000:]
  assert noticed - killed_at < 60, line
  # It restarted once, from the latest checkpoint, which is at most one interval old.
  restart = re.search(r"restart 1 of 1: starting every task again; training resumes from "
                      r"\S+model\.ckpt-(\d+)", output)
  assert restart, output[-5000:]
  resumed = int(restart.group(1))
  assert saved <= resumed < saved + 2 * INTERVAL
  assert (f"Restoring parameters from {model_dir}/model.ckpt-{resumed}" in
          helpers.task_logs(model_dir))
  # The job reached the step it asked for, and its final checkpoint reads back.
  assert STEPS <= restorable(model_dir) <= STEPS + 2
  summary = helpers.summaries(output)
  assert len(summary) == 1 and float(summary[0]["eval_accuracy"]) >= 0.85


def test_a_kill_during_checkpoint_writes_leaves_a_checkpoint_that_restores(tmp_path):
  """The CNN saves 13 MB at every step; the chief is killed at random moments."""
  model_dir, rng, resumed = str(tmp_path), random.Random(0), []
  for _ in range(3):
    job = helpers.Job("--strategy=multi_worker", "--num_workers=2",
                      program="model_zoo.mnist_cnn",
                      program_args=[f"--model_dir={model_dir}", "--train_steps=1000",
                                    "--save_checkpoints_steps=1"])
    try:
      wait_for_checkpoint(model_dir, checkpoint_step(model_dir) + 2, job)
      time.sleep(rng.uniform(0.0, 2.0))
      for p in psutil.Process(job.process.pid).children(recursive=True):
        try:
          environ = p.environ()
        except psutil.Error:  # It ended (a zombie, or gone) since it was listed.
          continue
        if '"type": "chief"' in environ.get("TF_CONFIG", ""):
          p.send_signal(signal.SIGKILL)
      assert job.wait(timeout=120) != 0
    finally:
      job.kill()
    resumed.append(restorable(model_dir))
  assert resumed == sorted(resumed) and resumed[0] > 0, resumed


def test_a_nan_loss_stops_training_naming_the_step_and_keeps_the_good_checkpoint(tmp_path):
  model_dir = str(tmp_path)
  job = helpers.Job("--strategy=horovod", "--num_workers=2", "--max_restarts=2",
                    program="tests.programs.diverging_model",
                    program_args=[f"--model_dir={model_dir}", "--nan_from_step=12",
                                  "--save_checkpoints_steps=5"])
  try:
    code = job.wait(timeout=180)
  finally:
    job.kill()
  output = job.output
  assert code == 3, output[-5000:]
  found = re.search(r"training diverged: the loss is nan at global step (\d+)\. The latest "
                    r"checkpoint, \S+model\.ckpt-(\d+), is from before it\.", output)
  assert found, output[-5000:]
  assert int(found.group(1)) in (12, 13) and int(found.group(2)) == 10
  assert "a restart from the same checkpoint would diverge again" in output
  assert "restart 1 of 2" not in output
  assert restorable(model_dir) == 10


def test_an_error_from_a_peer_ends_the_task_at_once_and_the_job_restarts(tmp_path):
  """TensorFlow's recovery from a peer's error (a new session from the latest checkpoint)
  left the two tasks of multi_worker waiting for each other at different steps, until
  the hang check stopped the job. Now the error ends the task, and the job restarts."""
  code, output = helpers.launch(
      "multi_worker", "tests.programs.plain_model", f"--model_dir={tmp_path}",
      "--unavailable_at_run=50", "--train_steps=300", "--save_checkpoints_steps=100",
      launch_args=("--max_restarts=1", "--hang_timeout_secs=120"), timeout=240)
  assert code == 0, output[-5000:]
  assert ("[worker:0] estimator-dist: error: worker:0 stopped on an error from a peer or a "
          "service during training (UnavailableError: Socket closed (a test's)): a task of a "
          "multi_worker job cannot go on alone, its peers would wait for it at another step. "
          "The job stops; a restart (launch --max_restarts, a JobSet's --backoff_limit) "
          "resumes every task from the latest checkpoint.") in output, output[-5000:]
  assert "restart 1 of 1" in output and "no training progress" not in output, output[-5000:]
  (summary,) = helpers.summaries(output)
  assert summary["steps"] == "300", summary


def first_after(job, text, moment):
  """(time, line) of the job's first line containing `text` after `moment`."""
  return next(((t, line) for t, line in job.lines if t > moment and text in line),
              (None, None))


def test_a_killed_worker_and_then_a_stopped_one_each_restart_the_job(tmp_path):
  """multi_worker, one job, two faults, each followed by a restart from the last checkpoint.

  SIGKILL of a worker once checkpoint 200 exists: the launcher notices its exit. Then,
  once the restarted job wrote a checkpoint of its own, SIGSTOP of its worker: alive but
  making no progress, and neither does its peer; the heartbeat notices. The timeout also
  bounds each restart's start to its first beat: 40 s leaves room for two starts on a
  machine that the suite's other tests keep busy."""
  model_dir = str(tmp_path)
  job = helpers.Job("--strategy=multi_worker", "--num_workers=2", "--max_restarts=2",
                    "--hang_timeout_secs=40",
                    program_args=[f"--model_dir={model_dir}", f"--train_steps={STEPS}",
                                  f"--save_checkpoints_steps={INTERVAL}",
                                  "--eval_throttle_secs=1"])
  try:
    wait_for_checkpoint(model_dir, 2 * INTERVAL, job)
    victim = training_process(job, "multi_worker")
    killed_at, saved = time.monotonic(), checkpoint_step(model_dir)
    victim.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 180
    while not (restart := re.search(r"restart 1 of 2: starting every task again; training "
                                    r"resumes from \S+model\.ckpt-(\d+)", job.output)):
      assert job.process.poll() is None and time.monotonic() < deadline, job.output[-5000:]
      time.sleep(0.05)
    resumed = int(restart.group(1))
    wait_for_checkpoint(model_dir, resumed + INTERVAL, job)
    victim = training_process(job, "multi_worker")
    stopped_at = time.monotonic()
    victim.send_signal(signal.SIGSTOP)
    code = job.wait(timeout=400)
  finally:
    job.kill()
  output = job.output
  assert code == 0, output[-5000:]
  # The kill: the launcher noticed the death and stopped the rest, within a bounded time,
  # and restarted from the latest checkpoint, which is at most one interval old.
  noticed, line = first_after(job, "exited with code", killed_at)
  assert noticed is not None and noticed < stopped_at, output[-5000:]
  assert noticed - killed_at < 60, line
  assert saved <= resumed < saved + 2 * INTERVAL
  assert (f"Restoring parameters from {model_dir}/model.ckpt-{resumed}" in
          helpers.task_logs(model_dir))
  # The stop: by its heartbeat, or as a stopped process, whichever look comes first.
  noticed, line = first_after(job, "; stopping the job", stopped_at)
  assert noticed is not None and "worker:0" in line and "for 40s (" in line, output[-5000:]
  # The last beat came up to a second before the stop.
  assert 39 <= noticed - stopped_at < 85, line
  assert "restart 2 of 2: starting every task again" in output
  # The job reached the step it asked for, and its final checkpoint reads back.
  assert STEPS <= restorable(model_dir) <= STEPS + 1
  summary = helpers.summaries(output)
  assert len(summary) == 1 and float(summary[0]["eval_accuracy"]) >= 0.85


def test_elastic_horovod_loses_a_worker_gains_one_and_finishes_the_run(tmp_path):
  """horovodrun --min-np/--max-np through the launcher; the hosts file loses a slot, then
  gets it back. The global batch stays 64 throughout."""
  model_dir, steps = str(tmp_path), 5000
  job = helpers.Job("--strategy=horovod", "--num_workers=2", "--elastic", "--max_workers=3",
                    program_args=[f"--model_dir={model_dir}", f"--train_steps={steps}",
                                  "--save_checkpoints_steps=500", "--global_batch_size=64",
                                  "--batch_size=32"])
  try:
    wait_for_checkpoint(model_dir, 500, job)
    hosts = re.search(r"elastic: the hosts are the lines of (\S+) ", job.output).group(1)
    with open(hosts, "w") as f:
      f.write("localhost:1\n")
    deadline = time.monotonic() + 120
    while "round on 1 rank(s)" not in job.output:
      assert job.process.poll() is None and time.monotonic() < deadline, job.output[-5000:]
      time.sleep(0.2)
    with open(hosts, "w") as f:
      f.write("localhost:2\n")
    code = job.wait(timeout=400)
  finally:
    job.kill()
  output = job.output
  assert code == 0, output[-5000:]
  rounds = re.findall(r"elastic round on (\d) rank\(s\), from (\S+)", output)
  changes = [int(s) for s in re.findall(r"the hosts changed at step (\d+); saved it", output)]
  assert [int(n) for n, _ in rounds] == [2, 1, 2], rounds
  assert len(changes) == 2 and changes == sorted(changes)
  # Each round resumed from the step the hosts changed at: nothing was lost.
  assert [start for _, start in rounds[1:]] == [f"{model_dir}/model.ckpt-{s}" for s in changes]
  assert restorable(model_dir) == steps
  summary, = helpers.summaries(output)
  # steps x global batch: the examples the run asked for.
  assert (summary["steps"], summary["global_batch"]) == (str(steps), "64")
