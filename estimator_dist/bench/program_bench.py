"""`estimator-dist bench -- python PROGRAM.py [its args]`: which strategy, and how many
workers, train the user's own program fastest on this machine.

  estimator-dist bench --num_workers=1,2 -- python train.py --train_steps=100000

For every worker count it runs the program, unmodified, as a job of each strategy, and
beside them the limit: as many independent copies of the program side by side, each a
one-process job on its share of the CPUs (a one-rank horovod job when horovod is the one
strategy compared: a program that starts Horovod itself runs only so). Each job is
measured from its tasks' heartbeats for --window_secs once every task is past
--warmup_steps, then stopped (`measured_job`). It prints a table (examples/sec, or
steps/sec where the program's batch cannot be read, with the spread over the window's
parts, the share of the limit and the speed-up over one process alone) and a
recommendation, and writes results.json and results.png to --output_dir
(`bench_report`).
"""

import importlib.util
import os
import sys

from absl import flags

from estimator_dist import command_line
from estimator_dist.bench import bench_report
from estimator_dist.bench import measured_job
from estimator_dist.bench import projection

LIMIT = bench_report.LIMIT
_STRATEGIES = ("mirrored", "multi_worker", "parameter_server", "horovod")
START_SECS = 25  # About how long a job takes to start and stop, for the estimate.


def define_flags(flag_values=flags.FLAGS):
  """Defines bench's flags on `flag_values` (the strategy benchmark's too)."""
  f = flag_values
  flags.DEFINE_list("strategies", list(_STRATEGIES), "Strategies to compare (horovod where "
                    "it is installed).", flag_values=f)
  flags.DEFINE_list("num_workers", ["1", "2"], "Worker counts to run each strategy with.",
                    flag_values=f)
  flags.DEFINE_integer("num_ps", 1, "parameter_server: the jobs' ps tasks.", lower_bound=1,
                       flag_values=f)
  flags.DEFINE_integer("warmup_steps", 20, "Global steps each job trains before its "
                       "measurement starts.", lower_bound=0, flag_values=f)
  flags.DEFINE_float("window_secs", 30, "Seconds each job is measured for.",
                     lower_bound=2, flag_values=f)
  flags.DEFINE_float("timeout_secs", 600, "A job not measured this long after its start "
                     "is stopped, and reported unmeasured.", lower_bound=10, flag_values=f)
  flags.DEFINE_bool("limit", True, "Also run the independent copies, the limit the "
                    "efficiency is measured against.", flag_values=f)
  flags.DEFINE_string("output_dir", "/tmp/estimator_dist_bench",
                      "Where results.json, results.png and each job's log go.", flag_values=f)
  flags.DEFINE_bool("project", False, "Project examples/sec and efficiency to 8-256 "
                    "workers with a cost model fitted to the measured jobs: the program's "
                    "compute and the bytes of its trainable variables.", flag_values=f)
  flags.DEFINE_float("project_bandwidth_gbps", None, "--project: the links' bandwidth in "
                     "Gbit/s, instead of the one fitted to this machine's jobs.",
                     lower_bound=0.001, flag_values=f)
  flags.DEFINE_float("project_latency_us", 0.0, "--project: latency of one message between "
                     "workers, in microseconds.", lower_bound=0.0, flag_values=f)
  flags.register_validator(
      "strategies", lambda v: v and all(s in _STRATEGIES for s in v),
      f"--strategies takes a comma-separated list of {', '.join(_STRATEGIES)}.",
      flag_values=f)
  flags.register_validator(
      "num_workers", lambda v: v and all(n.isdigit() and int(n) > 0 for n in v),
      "--num_workers takes a comma-separated list of positive integers, e.g. 1,2.",
      flag_values=f)
  flags.register_multi_flags_validator(
      ["window_secs", "timeout_secs"], lambda v: v["window_secs"] < v["timeout_secs"],
      "--timeout_secs must be longer than --window_secs: it bounds a job's start, warm-up "
      "and window.", flag_values=f)


def plan(strategies, worker_counts, *, limit=True):
  """The jobs, as (strategy, workers), in the order they run: each count's limit first."""
  jobs = []
  for workers in worker_counts:
    jobs += [(LIMIT, workers)] if limit else []
    jobs += [(s, workers) for s in strategies]
  return jobs


def strategies_here(strategies):
  """`strategies` without horovod where it is not installed (said); an empty list (said
  as an error) when none is left."""
  wanted = list(dict.fromkeys(strategies))
  if "horovod" in wanted and importlib.util.find_spec("horovod") is None:
    wanted.remove("horovod")
    command_line.write(sys.stdout, "horovod is left out: it is not installed here (pip "
                       "install 'estimator_dist[horovod]')", "bench")
    if not wanted:
      command_line.write_error("no strategy is left to measure", "bench")
  return wanted


def job_directory(output_dir, strategy, workers, label=""):
  """Where a job of the plan keeps its log (and its copies' or its model_dir)."""
  return os.path.join(output_dir, "runs", "-".join(filter(None, (strategy, label,
                                                                 str(workers)))))


def run_job(strategy, workers, *, program, window, num_ps, output_dir, copies_under="local",
            label="", **job_options):
  """Runs and measures one job of the plan; its row (`bench_report.row`). The limit's
  copies are one-process jobs of `copies_under`. `label` tells the job's directory
  (`job_directory`) from another of the same strategy; `job_options` go to each
  `measured_job.Job`."""
  directory = job_directory(output_dir, strategy, workers, label)
  if strategy == LIMIT:
    # Each copy on its own share of the CPUs, as the launcher pins a job's tasks.
    cpus = sorted(os.sched_getaffinity(0))
    per_copy = len(cpus) // workers
    jobs = [measured_job.Job(strategy=copies_under, num_workers=1, num_ps=0, program=program,
                             directory=f"{directory}/copy_{i}",
                             cpus=cpus[i * per_copy:(i + 1) * per_copy] if per_copy else None,
                             **job_options)
            for i in range(workers)]
  else:
    jobs = [measured_job.Job(strategy=strategy, num_workers=workers, num_ps=num_ps,
                             program=program, directory=directory, **job_options)]
  return bench_report.row(strategy, workers, measured_job.measure(jobs, window))


def _main(argv):
  program = argv[1:]
  if not program:
    command_line.write_error(f"name the program to measure after --: "
                             f"{command_line.PROGRAM} bench -- python train.py", "bench")
    return 2
  f = flags.FLAGS
  wanted = strategies_here(f.strategies)
  if not wanted:
    return 2
  counts = sorted({int(n) for n in f.num_workers})
  # A program that starts Horovod itself runs only as Horovod's ranks: its copies too.
  copies_under = "horovod" if wanted == ["horovod"] else "local"
  window = measured_job.Window(warmup_steps=f.warmup_steps, window_secs=f.window_secs,
                               timeout_secs=f.timeout_secs)
  jobs = plan(wanted, counts, limit=f.limit)
  minutes = len(jobs) * (f.window_secs + START_SECS) / 60
  output_dir = os.path.abspath(f.output_dir)
  print(command_line.line(
      f"{len(jobs)} job{'s' * (len(jobs) > 1)} ({', '.join(wanted)}"
      f"{' and the limit' if f.limit else ''} on "
      f"{', '.join(map(str, counts))} worker(s)), each measured for {f.window_secs:.0f} s "
      f"after {f.warmup_steps} warm-up steps: about {minutes:.0f} min plus the warm-ups "
      f"(at most {len(jobs) * (f.timeout_secs + 60) / 60:.0f} min)", "bench"), flush=True)
  rows = []
  for strategy, workers in jobs:
    print(command_line.line(f"{bench_report.name(dict(strategy=strategy, workers=workers))} "
                            f"...", "bench"), flush=True)
    rows.append(run_job(strategy, workers, program=program, window=window, num_ps=f.num_ps,
                        output_dir=output_dir, copies_under=copies_under))
    print(command_line.line(bench_report.describe(rows[-1]), "bench"), flush=True)
  report = bench_report.Report(rows=tuple(rows), program=tuple(program), window=window,
                               num_ps=f.num_ps)
  print(report.table())
  print(command_line.line(report.recommendation(), "bench"))
  extra = {}
  if f.project:
    fitted, projected = report.projection(bandwidth_gbps=f.project_bandwidth_gbps,
                                          latency_us=f.project_latency_us)
    print(projection.markdown(fitted, projected) if fitted else
          command_line.line(projected, "bench"))
    extra = {"projection": {"parameters": fitted, "rows": projected}} if fitted else {}
  for line in report.write(output_dir, extra):
    print(command_line.line(line, "bench"))
  return 0 if any(r["rate"] for r in rows if r["strategy"] != LIMIT) else 1


def run():
  define_flags()
  command_line.run(_main, command="bench")


if __name__ == "__main__":
  run()
