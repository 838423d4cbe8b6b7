"""The strategy benchmark's run (`compare_strategies` has its flags): `estimator-dist bench`
on model_zoo's program, with the hand-written programs and Horovod's variants beside it
and, on digits, the time to an accuracy."""

import os
import sys
import time

from absl import flags

from benchmarks import choices
from benchmarks import strategy_jobs
from estimator_dist import command_line
from estimator_dist.bench import bench_report
from estimator_dist.bench import measured_job
from estimator_dist.bench import program_bench
from estimator_dist.bench import projection

LIMIT, TOOLKIT = strategy_jobs.LIMIT, strategy_jobs.TOOLKIT
HAND_WRITTEN = strategy_jobs.HAND_WRITTEN


def plan(f, strategies):
  """Every job of one benchmark, as (kind, strategy, workers, variant), in the order they
  run: bench's plan, each toolkit job followed by its hand-written program and Horovod's
  variants."""
  planned = []
  for strategy, n in program_bench.plan(strategies, sorted({int(n) for n in f.num_workers}),
                                        limit=f.limit):
    if strategy == LIMIT:
      planned.append((LIMIT, LIMIT, n, ""))
      continue
    planned.append((TOOLKIT, strategy, n, ""))
    if f.baselines:
      planned.append((HAND_WRITTEN, strategy, n, ""))
    if strategy == "horovod" and n > 1:
      planned += [(TOOLKIT, strategy, n, v) for v in f.horovod_variants]
  return planned


def _name(row):
  said = bench_report.name(row)
  return said if row["job"] in (LIMIT, TOOLKIT) else f"{said}, {row['job']}"


def beside_table(toolkit_rows, beside):
  """The hand-written and variant jobs against the toolkit's job of the same strategy and
  workers: `toolkit / this` over 1 where the toolkit's is faster."""
  lines = ["| job | rate | spread | toolkit / this |", "| --- | --- | --- | --- |"]
  for r in beside:
    ours = next((t for t in toolkit_rows if t["strategy"] == r["strategy"]
                 and t["workers"] == r["workers"] and t["rate"]), None)
    if not r["rate"]:
      lines.append(f"| {_name(r)} | not measured | | |")
      continue
    ratio = f"{ours['rate'] / r['rate']:.2f}" if ours and ours["unit"] == r["unit"] else "–"
    spread = f"{100 * r['spread']:.0f} %" if r["spread"] is not None else "–"
    lines.append(f"| {_name(r)} | {bench_report.rate(r['rate'])} {r['unit']} | {spread} | "
                 f"{ratio} |")
  return "\n".join(lines)


def _time_to_accuracy(f, row, started):
  """When a checkpoint of the job's kept model_dir first reached --target_accuracy."""
  from benchmarks import accuracy  # pylint: disable=g-import-not-at-top  (evaluates)
  reached = accuracy.time_to_accuracy(f.model, row["model_dir"], started, f.target_accuracy)
  return {"job": bench_report.name(row), "seconds": reached[0] if reached else None,
          "step": reached[1] if reached else None}


def main(_):
  f = flags.FLAGS
  digits = f.data == "digits"
  window = measured_job.Window(warmup_steps=f.warmup_steps, window_secs=f.window_secs,
                               timeout_secs=f.timeout_secs)
  strategies = program_bench.strategies_here(f.strategies)
  if not strategies:
    return 2
  settings = strategy_jobs.Settings(
      model=f.model, data=f.data, batch_size=f.batch_size,
      threads_per_worker=f.threads_per_worker, output_dir=os.path.abspath(f.output_dir),
      window=window, num_ps=f.num_ps)
  jobs = plan(f, strategies)
  print(command_line.line(
      f"{len(jobs)} jobs, each measured for {f.window_secs:.0f} s after {f.warmup_steps} "
      f"warm-up steps" + (f" (the toolkit's train {f.steps} steps, to their end)" * digits)
      + f": about {len(jobs) * (f.window_secs + program_bench.START_SECS) / 60:.0f} min "
      f"plus the warm-ups", "bench"), flush=True)
  rows, beside, reached = [], [], []
  for kind, strategy, workers, variant in jobs:
    started = time.time()
    to_the_end = f.steps if digits and kind == TOOLKIT and not variant else None
    found = strategy_jobs.run(kind, strategy, workers, settings, label=variant,
                              extra=choices.HOROVOD_VARIANTS.get(variant, ()),
                              train_steps_to_end=to_the_end,
                              checkpoint_every=f.checkpoint_every)
    print(command_line.line(bench_report.describe(found, _name(found)), "bench"), flush=True)
    (rows if found["job"] in (LIMIT, TOOLKIT) else beside).append(found)
    if to_the_end:
      reached.append(_time_to_accuracy(f, found, started))
  report = bench_report.Report(rows=tuple(rows), program=tuple(
      strategy_jobs.toolkit_program(settings)), window=window, num_ps=settings.num_ps)
  print(f"model {f.model}, {f.data} data, batch {f.batch_size} per worker, "
        f"{f.threads_per_worker or 'default'} intra-op thread(s) per worker\n")
  print(report.table())
  print(command_line.line(report.recommendation(), "bench"))
  if beside:
    print("\n" + beside_table(rows, beside))
  for r in reached:
    print(f"{r['job']}: " + (f"{f.target_accuracy:g} accuracy after {r['seconds']:.1f} s "
                             f"(step {r['step']})" if r["seconds"] is not None else
                             f"never reached {f.target_accuracy:g} accuracy"))
  extra = {"beside": beside, "time_to_accuracy": reached}
  if f.project:
    fitted, projected = report.projection(bandwidth_gbps=f.project_bandwidth_gbps,
                                          latency_us=f.project_latency_us)
    print("\n" + (projection.markdown(fitted, projected) if fitted else
                  command_line.line(projected, "bench")))
    extra["projection"] = {"parameters": fitted, "rows": projected} if fitted else None
  for line in report.write(settings.output_dir, extra):
    print(command_line.line(line, "bench"))
  failed = [_name(r) for r in rows + beside if not r["rate"]]
  if failed:
    print(command_line.line(f"not measured: {', '.join(failed)}; logs in "
                            f"{os.path.join(settings.output_dir, 'runs')}", "bench"),
          file=sys.stderr)
    return 1
  return 0
