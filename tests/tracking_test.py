"""Experiment tracking in a real MLflow server: a job's run and a sweep's nested runs,
read back with MLflow's own client; a server that cannot be reached."""

import pytest

from estimator_dist.jobs import local_cluster
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
    code, sweep_output = helpers.run([
        helpers.PYTHON, "-m", "estimator_dist.cli", "sweep", f"--sweep_dir={sweep_dir}",
        "--space=learning_rate=choice(0.1,1e9) batch_size=choice(16,32)", "--sampler=grid",
        "--parallel=2", f"--mlflow_tracking_uri={uri}", "--", *DNN, "--train_steps=200"],
        timeout=400)
    assert code == 0, sweep_output[-5000:]
    mlflow.set_tracking_uri(uri)  # Its artifacts are listed through the global URI.
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)

    # The job: one run, by its chief, with what it was, how it went and what it made.
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
