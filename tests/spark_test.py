"""Spark: real training through estimator_dist.jobs.spark on pyspark in local[2] mode."""

import json

import pytest

from tests import helpers

pytestmark = pytest.mark.processes


def spark_train(*args, timeout=400):
  return helpers.run([helpers.PYTHON, "-m", "tests.programs.spark_train", *args],
                      timeout=timeout)


def results(output):
  lines = [line for line in output.splitlines() if line.startswith("RESULTS ")]
  assert len(lines) == 1, output[-5000:]
  return json.loads(lines[0][len("RESULTS "):])


@pytest.mark.parametrize("strategy,args,steps", [
    ("multi_worker", [], 300),
    ("horovod", [], 300),
    # Chief, worker and ps: three tasks at once need three slots. The ps exits by itself,
    # which lets the barrier stage end.
    ("parameter_server", ["--spark_slots=3"], 300),
])
def test_a_model_trains_through_spark_like_through_the_launcher(strategy, args, steps, tmp_path):
  code, output = spark_train(f"--strategy={strategy}", "--num_workers=2", *args,
                             f"--model_dir={tmp_path}", f"--train_steps={steps}")
  assert code == 0, output[-5000:]
  chief, *others = results(output)
  # The bar of the launcher's tests (tests/integration_test.py).
  assert chief["global_step"] >= steps and chief["accuracy"] >= 0.90, chief
  assert others == [None] * (2 if strategy == "parameter_server" else 1)
  found = helpers.summaries(output)
  assert len(found) == 1 and (found[0]["workers"], found[0]["replicas"]) == ("2", "2")


def test_a_failing_task_fails_the_spark_job_and_stops_the_others(tmp_path):
  code, output = spark_train("--strategy=multi_worker", "--num_workers=2",
                             f"--model_dir={tmp_path}", "--fail_worker", timeout=180)
  assert code != 0
  assert "estimator_dist.jobs.spark: task worker:0 exited with code 1" in output
  assert "ValueError: this worker fails on purpose" in output


def test_more_tasks_than_spark_slots_is_refused_at_once(tmp_path):
  code, output = spark_train("--strategy=parameter_server", "--num_workers=2",
                             f"--model_dir={tmp_path}", timeout=180)
  assert code != 0
  assert ("strategy 'parameter_server' with 2 worker(s), 1 ps and 0 evaluator runs 3 Spark "
          "tasks at once, but this Spark context has 2 task slots. Give it at least 3 "
          "(local[3], or more executors or cores).") in output
