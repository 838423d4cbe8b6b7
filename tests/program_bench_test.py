"""`estimator-dist bench -- python PROGRAM`: its measurement, report and a short real run."""

import dataclasses
import json
import os

import pytest

from estimator_dist.bench import bench_report
from estimator_dist.bench import measured_job
from estimator_dist.bench import program_bench
from tests import helpers

WINDOW = measured_job.Window(warmup_steps=3, window_secs=3, timeout_secs=300)


def measured(steps_per_sec, seconds=10, batch=32):
  return measured_job.Measured(
      beats=tuple((int(steps_per_sec * t), 100.0 + t) for t in range(seconds + 1)),
      examples_per_step=batch)


def test_a_program_trains_in_the_benchs_model_dir_in_any_form_absl_reads():
  for given in (["--model_dir=/mine"], ["--model_dir", "/mine"], ["-model_dir=/mine"]):
    assert measured_job.program_args(["train.py", "--steps=5", *given, "--x=1"], "/b") == [
        "train.py", "--steps=5", "--x=1", "--model_dir=/b"]
  assert measured_job.program_args(["train.py", "--steps=5"], "/b") == ["train.py", "--steps=5"]


def test_the_rate_is_the_windows_steps_over_its_time_times_the_batch():
  found = measured(4.0)
  assert found.steps_per_sec == pytest.approx(4.0) and found.rate == pytest.approx(128.0)
  assert found.window_rates() == pytest.approx([128.0] * 5)
  unknown = measured_job.Measured(beats=((0, 0.0), (10, 5.0)))
  assert unknown.rate == pytest.approx(2.0)  # Steps per second: said so by the row's unit.


def test_the_limit_adds_its_copies_and_a_failed_job_is_not_measured():
  limit = bench_report.row(bench_report.LIMIT, 2, [measured(2.0), measured(3.0)])
  assert limit["rate"] == pytest.approx(160.0) and limit["unit"] == "examples/s"
  failed = bench_report.row("mirrored", 2, [measured_job.Measured(failure="no heartbeat")])
  assert failed["rate"] is None and failed["failure"] == "no heartbeat"
  steps = bench_report.row("local", 1, [measured_job.Measured(beats=((0, 0.0), (10, 5.0)))])
  assert steps["unit"] == "steps/s" and steps["rate"] == pytest.approx(2.0)


def test_the_recommendation_names_the_fastest_and_says_why():
  report = bench_report.Report(window=WINDOW, program=("train.py",), rows=(
      bench_report.row(bench_report.LIMIT, 1, [measured(4.0)]),
      bench_report.row(bench_report.LIMIT, 2, [measured(4.0), measured(4.0)]),
      bench_report.row("multi_worker", 2, [measured(3.0)]),
      bench_report.row("mirrored", 2, [measured(3.5)]),
      bench_report.row("horovod", 2, [measured_job.Measured(failure="not installed")])))
  line = report.recommendation()
  assert line.startswith("recommended: mirrored on 2 workers, 112 examples/s, 0.88× one "
                         "process alone, 44 % of 2 independent copies"), line
  assert "the next, multi_worker on 2 workers, is 14 % slower" in line, line
  table = report.table()
  assert "horovod on 2 workers" in table and "not measured" in table, table


def test_the_projection_uses_the_programs_compute_and_model_size():
  def row(strategy, workers, *rates):
    return bench_report.row(strategy, workers, [dataclasses.replace(
        measured(r, batch=64), trainable_bytes=10_000_000) for r in rates])
  report = bench_report.Report(window=WINDOW, program=("train.py",), rows=(
      row("independent", 1, 20), row("independent", 2, 1 / 0.06, 1 / 0.06),
      row("multi_worker", 2, 12.5)))
  fitted, projected = report.projection()
  assert fitted["t_compute"] == pytest.approx(0.05, rel=0.02)
  assert fitted["model_bytes"] == 10_000_000 and "loopback" in fitted["bandwidth_source"]
  assert {r["workers"] for r in projected} == {8, 16, 32, 64, 128, 256}
  given, _ = report.projection(bandwidth_gbps=25)
  assert given["bandwidth_source"] == "given as 25 Gbit/s"
  fitted, why = bench_report.Report(window=WINDOW, program=(), rows=report.rows[:1]).projection()
  assert fitted is None and "a job of more than one worker" in why


def test_the_plan_runs_each_counts_limit_first():
  assert program_bench.plan(["mirrored", "horovod"], [1, 2]) == [
      ("independent", 1), ("mirrored", 1), ("horovod", 1),
      ("independent", 2), ("mirrored", 2), ("horovod", 2)]


@pytest.mark.processes
def test_bench_measures_an_upstream_program_as_written(tmp_path):
  """TensorFlow's premade_estimator, which gives the toolkit no batch size (nor a flag),
  measured in examples/sec as one process and against its limit."""
  script = os.path.join(os.path.dirname(helpers.PYTHON), "estimator-dist")
  code, output = helpers.run(
      [script, "bench", "--strategies=mirrored", "--num_workers=1", "--warmup_steps=3",
       "--window_secs=3", f"--output_dir={tmp_path}", "--",
       helpers.PYTHON, "-m", "tests.programs.upstream.premade_estimator"], timeout=400)
  assert code == 0, output[-4000:]
  assert "2 jobs (mirrored and the limit on 1 worker(s))" in output, output[-4000:]
  assert "recommended: mirrored on 1 worker, " in output, output[-4000:]
  results = json.loads((tmp_path / "results.json").read_text())
  rows = {r["strategy"]: r for r in results["rows"]}
  assert rows["mirrored"]["unit"] == "examples/s" and rows["mirrored"]["rate"] > 0, rows
  assert rows["mirrored"]["examples_per_step"] == 256, rows  # Its batch, read.
  assert rows["independent"]["rate"] > 0 and rows["mirrored"]["of_limit"] > 0, rows
  assert (tmp_path / "results.png").is_file()
  for run in ("mirrored-1", "independent-1/copy_0"):  # Each job's log kept, nothing else.
    assert os.listdir(tmp_path / "runs" / run) == ["launch.log"], run
