"""Watching jobs and sweeps: a job's run and a grid sweep's nested runs in a real MLflow
server, read back with MLflow's own client; the sweep's results, progress lines and
optuna-dashboard; a server that cannot be reached, and one that answers a byte a second."""

import contextlib
import json
import os
import re
import socket
import threading
import time
import urllib.request

import pytest

from estimator_dist.supervision import local_cluster
from tests import helpers
from tests import mlflow_server

pytestmark = pytest.mark.processes

DNN = [helpers.PYTHON, "-m", "model_zoo.mnist_dnn", "--save_checkpoints_steps=100",
       "--eval_throttle_secs=0"]


def _runs(client, **tags):
  """The runs of the default experiment whose tags have these values."""
  experiment = client.get_experiment_by_name("estimator_dist")
  found = client.search_runs([experiment.experiment_id], max_results=100)
  return [r for r in found if all(r.data.tags.get(k) == str(v) for k, v in tags.items())]


def _check_grid_sweep(sweep_dir, output):
  """Every point of the grid ran, two at a time; two diverge; the progress lines count."""
  assert "the grid has 4 points; running 4 trials, not 6" in output
  with open(sweep_dir / "sweep.json") as f:
    trials = json.load(f)["trials"]
  assert sorted((t["params"]["batch_size"], t["params"]["learning_rate"]) for t in trials) == [
      (16, 0.1), (16, 1e9), (32, 0.1), (32, 1e9)]
  for trial in trials:
    log = open(os.path.join(trial["model_dir"], "launch.log")).read()
    assert f"--learning_rate={trial['params']['learning_rate']}" in log
    if trial["params"]["learning_rate"] == 0.1:
      assert trial["state"] == "complete" and trial["steps"] == 200, trial
      assert trial["value"] > 0.8, trial  # Digits, 200 steps.
    else:  # A result of its values, not an error of the sweep.
      assert trial["state"] == "diverged" and trial["value"] is None, trial
  # Two at a time, on CPU 0 and CPU 1.
  started = [line for line in output.splitlines() if "started on CPUs" in line]
  assert {line.split("CPUs ")[1].split("]")[0] for line in started[:2]} == {"[0", "[1"}
  assert "Best (maximize eval accuracy)" in (sweep_dir / "report.md").read_text()
  counts = [tuple(map(int, m.groups())) for m in re.finditer(
      r"progress: (\d+) of 4 finished \((\d+) complete, 0 pruned, (\d+) diverged\), "
      r"(\d+) running, 0 failed", output)]
  assert counts and all(f == c + d and r <= 2 for f, c, d, r in counts), output[-3000:]
  assert [f for f, _, _, _ in counts] == sorted(f for f, _, _, _ in counts), counts


def _check_dashboard(sweep):
  """The dashboard serves the study while the sweep runs and after, on 127.0.0.1."""
  deadline = time.monotonic() + 400
  while not sweep.first("serves until Ctrl-C")[1]:
    assert sweep.process.poll() is None and time.monotonic() < deadline, sweep.output[-5000:]
    time.sleep(0.5)
  _, line = sweep.first("estimator-dist sweep: dashboard at ")
  url = re.search(r"(http://127\.0\.0\.1:\d+)", line).group(1)
  with urllib.request.urlopen(f"{url}/api/studies", timeout=10) as answer:
    (study,) = json.load(answer)["study_summaries"]
  with urllib.request.urlopen(f"{url}/api/studies/{study['study_id']}?after=0",
                              timeout=10) as answer:
    detail = json.load(answer)
  trials = detail["trials"]
  assert detail["objective_names"] == ["accuracy"], detail.keys()  # Named after the metric.
  assert sorted(t["number"] for t in trials) == [0, 1, 2, 3], trials
  assert sorted(t["state"] for t in trials) == ["Complete", "Complete", "Fail", "Fail"], trials


def test_a_job_and_a_sweep_are_runs_of_a_real_mlflow_server(tmp_path):
  import mlflow  # pylint: disable=g-import-not-at-top
  with mlflow_server.running() as uri:
    job_dir = tmp_path / "job"
    code, output = helpers.run(helpers.launch_command(
        "--strategy=multi_worker", "--num_workers=2", f"--mlflow_tracking_uri={uri}",
        program=[*DNN, f"--model_dir={job_dir}", "--train_steps=300", "--exporters=final"]),
        timeout=300)
    assert code == 0, output[-5000:]
    sweep_dir = tmp_path / "sweep"
    sweep = helpers.Job(command=[
        helpers.PYTHON, "-m", "estimator_dist.cli", "sweep", f"--sweep_dir={sweep_dir}",
        "--space=learning_rate=choice(0.1,1e9) batch_size=choice(16,32)", "--sampler=grid",
        "--trials=6", "--parallel=2", "--progress_secs=1", f"--mlflow_tracking_uri={uri}",
        "--dashboard", "--", *DNN, "--train_steps=200"])
    try:
      _check_dashboard(sweep)
    finally:
      sweep.process.terminate()  # The dashboard serves until then.
    assert sweep.wait(timeout=60) == 0, sweep.output[-5000:]
    _check_grid_sweep(sweep_dir, sweep.output)
    mlflow.set_tracking_uri(uri)  # Its artifacts are listed through the global URI.
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)

    # The job: one run, with what it was, how it went and what it made.
    (job,) = _runs(client, **{"estimator_dist.model_dir": job_dir})
    assert job.info.status == "FINISHED", job
    params = job.data.params
    assert (params["strategy"], params["workers"], params["train_steps"]) == (
        "multi_worker", "2", "300"), params
    assert params["global_batch"] == "64" and params["exporters"] == "['final']", params
    assert params["lr_scaling"] == "linear" and float(params["lr_scaled"]) == pytest.approx(
        2 * float(params["lr_base"])), params
    accuracy = client.get_metric_history(job.info.run_id, "eval_accuracy")
    assert len(accuracy) >= 2 and max(m.step for m in accuracy) == 300, accuracy
    assert client.get_metric_history(job.info.run_id, "train_loss")
    summary, = helpers.summaries(output)
    assert job.data.metrics["summary/examples/sec"] == float(summary["examples/sec"])
    (export,) = client.list_artifacts(job.info.run_id, "export/final")
    assert "saved_model.pb" in [a.path.rsplit("/", 1)[1]
                                for a in client.list_artifacts(job.info.run_id, export.path)]

    # The sweep: a parent run, and a run of each trial nested in it, tagged how it ended.
    (parent,) = _runs(client, **{"estimator_dist.sweep_dir": sweep_dir})
    assert parent.info.status == "FINISHED" and parent.data.params["sampler"] == "grid"
    assert parent.data.metrics["trials_complete"] == 2 and \
        parent.data.metrics["trials_diverged"] == 2, parent.data.metrics
    trials = _runs(client, **{"mlflow.parentRunId": parent.info.run_id})
    assert sorted(t.data.tags["estimator_dist.trial"] for t in trials) == ["0", "1", "2", "3"]
    for trial in trials:
      diverged = float(trial.data.params["learning_rate"]) == 1e9
      assert trial.data.tags["estimator_dist.state"] == (
          "diverged" if diverged else "complete"), trial
      assert trial.info.status == ("FAILED" if diverged else "FINISHED"), trial
      if diverged:
        assert "training diverged: the loss is" in trial.data.tags[
            "estimator_dist.failure"], trial.data.tags
      else:
        assert client.get_metric_history(trial.info.run_id, "eval_accuracy"), trial

  # A server that cannot be reached: one warning, and the job trains as it would.
  closed = local_cluster.free_ports(1)[0]
  code, output = helpers.run(helpers.launch_command(
      "--strategy=local", "--num_workers=1", f"--mlflow_tracking_uri=http://127.0.0.1:{closed}",
      program=[*DNN, f"--model_dir={tmp_path / 'untracked'}", "--train_steps=50"]), timeout=300)
  assert code == 0, output[-5000:]
  warnings = [line for line in output.splitlines() if "MLflow tracking at" in line]
  assert len(warnings) == 1 and "training goes on untracked" in warnings[0], warnings


# An HTTP answer that is never complete: 600 bytes, one a second, bound each connection.
_SLOW_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"." * 540


@contextlib.contextmanager
def _slow_server():
  """Yields the URI of a server on a free port of 127.0.0.1 that answers every connection
  one byte a second: each read of MLflow's client gets a byte well within its timeout, so
  only a deadline on the whole call ends it. Stopped, every thread joined, at the end."""
  stop, threads = threading.Event(), []

  def dribble(connection):
    with connection:
      for byte in _SLOW_ANSWER:
        if stop.wait(1):
          return
        try:
          connection.sendall(bytes([byte]))
        except OSError:
          return  # The client gave up.

  def serve(listener):
    while not stop.is_set():
      try:
        connection, _ = listener.accept()
      except socket.timeout:
        continue
      threads.append(threading.Thread(target=dribble, args=(connection,), daemon=True))
      threads[-1].start()

  with socket.create_server(("127.0.0.1", 0)) as listener:
    listener.settimeout(0.2)
    threads.append(threading.Thread(target=serve, args=(listener,), daemon=True))
    threads[0].start()
    try:
      yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
      stop.set()
      for thread in threads:
        thread.join(5)


def test_a_server_that_answers_a_byte_a_second_delays_training_by_the_deadline_at_most(
    tmp_path):
  """Such a server held the launcher's first call for as long as it dribbled: no step was
  trained in 150 s. Now the call ends at its deadline, with one warning, and the job trains
  untracked."""
  from estimator_dist.outputs import tracking  # pylint: disable=g-import-not-at-top
  started = time.monotonic()
  with _slow_server() as uri:
    code, output = helpers.run(helpers.launch_command(
        "--strategy=local", "--num_workers=1", f"--mlflow_tracking_uri={uri}",
        program=(helpers.PYTHON, "-m", "tests.programs.plain_model",
                 f"--model_dir={tmp_path}", "--train_steps=20")), timeout=150)
  assert code == 0, output[-5000:]
  warnings = [line for line in output.splitlines() if "MLflow tracking at" in line]
  assert len(warnings) == 1, warnings
  assert (f"no complete answer within {tracking.CALL_DEADLINE_SECS}s" in warnings[0] and
          "training goes on untracked" in warnings[0]), warnings
  assert "estimator-dist launch: summary" in output, output[-3000:]
  print(f"measured: a job tracked at a server answering a byte a second ended in "
        f"{time.monotonic() - started:.1f} s: {warnings[0]}")
