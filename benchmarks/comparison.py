"""The benchmark's run (`compare_strategies` has its flags): its jobs, their measurement,
the report and the projection."""

import dataclasses
import os
import sys

from absl import flags

from benchmarks import choices
from benchmarks import models
from benchmarks import report
from benchmarks import runner
from benchmarks import stats
from estimator_dist import command_line
from estimator_dist.bench import projection
from estimator_dist.strategies import traits


def jobs(f):
  """Every job of one benchmark, in the order they run."""
  strategies = [traits.of(s).name for s in f.strategies]
  counts = sorted({int(n) for n in f.num_workers})
  planned = []
  for n in counts:
    planned.append(runner.Job("independent", "local", n))
    for strategy in strategies:
      planned.append(runner.Job("toolkit", strategy, n))
      if f.baselines:
        planned.append(runner.Job("baseline", strategy, n))
      if strategy == "horovod" and n > 1:
        planned += [runner.Job("toolkit", strategy, n, v, choices.HOROVOD_VARIANTS[v])
                    for v in f.horovod_variants]
  return planned


def _project(f, rows):
  """Prints and returns the cost-model projection of `rows` (None if it cannot be fitted)."""
  per_worker = {
      (projection.INDEPENDENT if r["kind"] == "independent" else r["strategy"], r["workers"]):
      r["per_worker"] for r in rows
      if r["examples_per_sec"] and r["kind"] != "baseline" and not r["variant"]}
  fitted = projection.fit(per_worker=per_worker, batch=f.batch_size,
                          model_bytes=models.parameter_bytes(f.model),
                          bandwidth_gbps=f.project_bandwidth_gbps)
  if not fitted:
    print("\n" + command_line.line("--project needs an independent 1-worker job and a "
                                  "toolkit job with more than one worker slower than its "
                                  "independent workers", "bench"),
          file=sys.stderr)
    return None
  projected = projection.project(fitted, f.project_latency_us * 1e-6)
  print("\n" + projection.markdown(fitted, projected))
  return {"parameters": fitted, "rows": projected}


def _ps_baseline_steps(f, job, results):
  """The steps of a hand-written parameter_server job: its worker k starts min(60, 5 (k+1))
  s after its chief (Estimator's delay) and, when it looks before the chief has made the
  variables, 30 s later still (TensorFlow's session manager waits so long between looks),
  while the chief trains alone. On top of --steps it gets the steps the toolkit's job made
  in that time (a bound: the chief alone makes fewer), so that its tasks train together
  for as many steps as the toolkit's did."""
  if job.num_workers < 2:
    return f.steps
  measured = next((r["throughput"] for r in results if r["job"].kind == "toolkit"
                   and r["job"].strategy == job.strategy and not r["job"].variant
                   and r["job"].num_workers == job.num_workers and r["throughput"]), None)
  if measured is None:
    return f.steps * 3  # Unknown: the toolkit's job was not measured.
  alone_secs = min(60, 5 * (job.num_workers - 1)) + 30 + 10
  return f.steps + int(alone_secs * measured["examples_per_sec"] / f.batch_size)


def main(_):
  f = flags.FLAGS
  settings = runner.Settings(
      model=f.model, data=f.data, batch_size=f.batch_size, steps=f.steps,
      threads_per_worker=f.threads_per_worker, output_dir=os.path.abspath(f.output_dir),
      checkpoint_every=f.checkpoint_every if f.data == "digits" else 0)
  results = []
  for job in jobs(f):
    if job.kind == "baseline" and traits.of(job.strategy).needs_ps:
      job = dataclasses.replace(job, steps=_ps_baseline_steps(f, job, results))
    print(command_line.line(f"{job.name} ...", "bench"), flush=True)
    result = runner.run(job, settings)
    result["throughput"] = stats.throughput(result["timings"], f.warmup_steps, f.window_steps)
    print(command_line.line(f"{job.name}: exit code {result['code']}, "
                            f"{result['seconds']:.0f}s, {report.rate_text(result)}", "bench"),
          flush=True)
    results.append(result)
  rows = report.rows(results)
  if f.data == "digits":
    report.add_time_to_accuracy(rows, results, settings, f.target_accuracy)
  print(report.markdown(rows, settings, f.target_accuracy if f.data == "digits" else None))
  extra = {"projection": _project(f, rows)} if f.project else {}
  report.write(rows, settings, f.output_dir, extra)
  runs = os.path.join(f.output_dir, "runs")
  unmeasured = [r["job"].name for r in results if r["code"] == 0 and not r["throughput"]]
  if unmeasured:
    print(command_line.line(f"no span where all tasks ran past warm-up, so no measurement: "
                            f"{', '.join(unmeasured)}; logs in {runs}", "bench"),
          file=sys.stderr)
  failed = [r["job"].name for r in results if r["code"] != 0]
  if failed:
    print(command_line.line(f"failed: {', '.join(failed)}; logs in {runs}", "bench"),
          file=sys.stderr)
    return 1
  return 0
