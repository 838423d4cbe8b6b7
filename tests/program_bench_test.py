"""`estimator-dist bench -- python PROGRAM`: its measurement, report and a short real run."""

import dataclasses
import importlib.util
import json
import os

import pytest

from estimator_dist.bench import bench_report
from estimator_dist.bench import measured_job
from estimator_dist.bench import program_bench
from estimator_dist.contract import heartbeat
from estimator_dist.jobs import model_dir_arg
from tests import helpers

WINDOW = measured_job.Window(warmup_steps=3, window_secs=3, timeout_secs=300)


def measured(steps_per_sec, seconds=10, batch=32):
  return measured_job.Measured(
      beats=tuple((int(steps_per_sec * t), 100.0 + t) for t in range(seconds + 1)),
      examples_per_step=batch)


def test_a_program_trains_in_the_benchs_model_dir_in_any_form_absl_reads():
  for given in (["--model_dir=/mine"], ["--model_dir", "/mine"], ["-model_dir=/mine"]):
    assert model_dir_arg.with_flag(["train.py", "--steps=5", *given, "--x=1", "--",
                                    "--model_dir=theirs"], "model_dir", "/b") == [
        "train.py", "--steps=5", "--x=1", "--model_dir=/b", "--", "--model_dir=theirs"]
  assert model_dir_arg.with_flag(["train.py", "--steps=5"], "model_dir", "/b") == [
      "train.py", "--steps=5"]


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
  def report(mirrored):
    return bench_report.Report(window=WINDOW, program=("train.py",), rows=(
        bench_report.row(bench_report.LIMIT, 1, [measured(4.0)]),
        bench_report.row(bench_report.LIMIT, 2, [measured(4.0), measured(4.0)]),
        bench_report.row("multi_worker", 2, [measured(3.0)]),
        bench_report.row("mirrored", 2, [measured(mirrored)]),
        bench_report.row("horovod", 2, [measured_job.Measured(failure="not installed")])))
  line = report(5.0).recommendation()
  assert line.startswith("recommended: mirrored on 2 workers, 160 examples/s, 1.25× one "
                         "process alone, 62 % of 2 independent copies"), line
  assert "the next, multi_worker on 2 workers, is 40 % slower" in line, line
  table = report(5.0).table()
  assert "horovod on 2 workers" in table and "not measured" in table, table
  # Slower than the program alone: one process is the answer.
  assert report(3.5).recommendation() == (
      "recommended: one process (--strategy=local), 128 examples/s: no strategy measured "
      "trains this program faster on this machine; the fastest, mirrored on 2 workers, is "
      "12 % slower")


def test_the_projection_uses_the_programs_compute_and_model_size():
  def row(strategy, workers, steps_per_sec, batch, copies=1):
    return bench_report.row(strategy, workers, [dataclasses.replace(
        measured(steps_per_sec, batch=batch), trainable_bytes=10_000_000)] * copies)
  # One copy alone 50 ms a step of 64; two copies 60 ms; multi_worker 80 ms a step of 2 x 64.
  report = bench_report.Report(window=WINDOW, program=("train.py",), rows=(
      row("independent", 1, 20, 64), row("independent", 2, 1 / 0.06, 64, copies=2),
      row("multi_worker", 2, 12.5, 128)))
  fitted, projected = report.projection()
  assert fitted["t_compute"] == pytest.approx(0.05, rel=0.02)
  # What a worker's step takes beyond the copies' (80 ms against 60), as the table says.
  extra = [r["extra_step_ms"] for r in report.compared()]
  assert extra[:2] == [None, None] and extra[2] == pytest.approx(20.0, rel=0.05), extra
  assert float(report.table().splitlines()[3].split()[-1]) == pytest.approx(extra[2], abs=0.05)
  # The all-reduce moved 2 (n-1)/n S = S bytes in the 20 ms it added.
  assert fitted["ring_bytes_per_sec"] == pytest.approx(10_000_000 / 0.02, rel=0.05)
  assert fitted["model_bytes"] == 10_000_000 and "loopback" in fitted["bandwidth_source"]
  assert {r["workers"] for r in projected} == {8, 16, 32, 64, 128, 256}
  given, _ = report.projection(bandwidth_gbps=25)
  assert given["bandwidth_source"] == "given as 25 Gbit/s"
  fitted, why = bench_report.Report(window=WINDOW, program=(), rows=report.rows[:1]).projection()
  assert fitted is None and "a job of more than one worker" in why


class FakeJob(measured_job.Job):
  """A job whose heartbeats are `beats` ({task: Progress} at each look) and whose
  launcher exits with `code` after them (None: it runs until it is stopped)."""

  def __init__(self, tmp_path, beats, code=None, tasks=1, log="trained\n"):
    self.tasks, self._beats, self._asked, self.code = tasks, list(beats), False, None
    self.log_path = str(tmp_path / "launch.log")
    (tmp_path / "launch.log").write_text(log)
    self.process = self
    self._code = code

  def poll(self):
    return self._code if not self._beats else None

  def progress(self):
    return self._beats.pop(0) if self._beats else {}

  def ask_to_stop(self):
    self.ended_by_itself()
    self._asked = True

  def stop(self):
    self.ask_to_stop()


def beating(steps, *, start=0.0, ended_at=None):
  return [{"chief:0": heartbeat.Progress(step=s, last_step=1000, examples_per_step=32,
                                         time=start + i, ended=s == ended_at)}
          for i, s in enumerate(steps)]


@pytest.fixture
def fast_polls(monkeypatch):
  monkeypatch.setattr(measured_job, "_POLL_SECS", 0)


def test_a_job_that_fails_in_its_window_is_not_measured_and_says_why(tmp_path, fast_polls):
  window = measured_job.Window(warmup_steps=5, window_secs=10, timeout_secs=60)
  job = FakeJob(tmp_path, beating([1, 10, 20, 30]), code=1,
                log="[chief:0] Traceback\n[chief:0] ValueError: the program's own bug\n")
  found, = measured_job.measure([job], window)
  assert found.rate is None and found.failure.startswith(
      "exit code 1: [chief:0] ValueError: the program's own bug (see "), found


def test_a_window_cut_short_by_the_end_of_training_is_said(tmp_path, fast_polls):
  window = measured_job.Window(warmup_steps=5, window_secs=10, timeout_secs=60)
  found, = measured_job.measure(
      [FakeJob(tmp_path, beating([1, 10, 20, 30, 40, 50], ended_at=50), code=0)], window)
  assert found.steps_per_sec == pytest.approx(10.0) and found.cut_short == (
      "4 s of 10: its training ended"), found
  row = bench_report.row("mirrored", 1, [found])
  assert "cut short, 4 s of 10: its training ended" in bench_report.describe(row)


def test_a_window_to_the_end_lasts_until_the_job_exits(tmp_path, fast_polls):
  """The strategy benchmark's jobs that train to their end: past the window's seconds and
  the training's end, not cut short."""
  window = measured_job.Window(warmup_steps=5, window_secs=2, timeout_secs=60,
                               to_the_end=True)
  found, = measured_job.measure(
      [FakeJob(tmp_path, beating([1, 10, 20, 30, 40, 50], ended_at=50), code=0)], window)
  assert found.beats[0] == (10, 1.0) and found.beats[-1] == (50, 5.0), found.beats
  assert found.steps_per_sec == pytest.approx(10.0) and not found.cut_short, found


def test_the_warm_up_counts_from_each_tasks_first_beat(tmp_path, fast_polls):
  """A worker that joins late, at global step 100, is still warming up then."""
  window = measured_job.Window(warmup_steps=20, window_secs=3, timeout_secs=60)
  looks = [{"chief:0": heartbeat.Progress(step=s, last_step=1000, time=t),
            **({"worker:0": heartbeat.Progress(step=s, last_step=1000, time=t)}
               if s >= 100 else {})} for t, s in enumerate(range(0, 200, 10))]
  found, = measured_job.measure([FakeJob(tmp_path, looks, tasks=2)], window)
  assert found.beats[0][0] == 120, found.beats


def test_a_flat_window_has_no_spread():
  flat = measured_job.Measured(beats=((10, 0.0), (10, 1.0), (10, 2.0), (11, 3.0)))
  assert bench_report.spread([flat]) is None
  assert bench_report.spread([measured(4.0, seconds=2)]) is None  # Two parts: too few.


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
  assert "\nestimator-dist bench: recommended: " in output, output[-4000:]
  results = json.loads((tmp_path / "results.json").read_text())
  rows = {r["strategy"]: r for r in results["rows"]}
  assert rows["mirrored"]["unit"] == "examples/s" and rows["mirrored"]["rate"] > 0, rows
  assert rows["mirrored"]["examples_per_step"] == 256, rows  # Its batch, read.
  assert rows["independent"]["rate"] > 0 and rows["mirrored"]["of_limit"] > 0, rows
  # The chart where matplotlib is (the charts extra), else a line saying so.
  assert (tmp_path / "results.png").is_file() == bool(importlib.util.find_spec("matplotlib"))
  for run in ("mirrored-1", "independent-1/copy_0"):  # Each job's log kept, nothing else.
    assert os.listdir(tmp_path / "runs" / run) == ["launch.log"], run
