"""Where each synchronous strategy's step goes on this machine, against its limit.

  python benchmarks/step_breakdown.py --strategies=horovod,mirrored,multi_worker \\
      --num_workers=2 --steps=200 --output_dir=/tmp/breakdown

For every strategy it trains the model twice with estimator_dist: once measured as the
strategy benchmark measures it (the step, from the heartbeats), once for --steps with
TensorFlow's profiler over a window of steps on the chief (and Horovod's timeline), which
`breakdown` splits into compute, input, exchange, waiting for the peer, the executor's own
time and the time outside the session runs. The limit is the step of independent workers
here plus one all-reduce of the model's gradients measured alone (allreduce_cost.py, under
the toolkit's Horovod CPU settings). Writes a markdown table to stdout, results.json and
breakdown.png to --output_dir.
"""

import dataclasses
import glob
import json
import os
import re
import subprocess
import sys

if __package__ in (None, ""):  # Run as a script: make the repository importable.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from benchmarks import breakdown
from benchmarks import choices
from estimator_dist import command_line

flags.DEFINE_list("strategies", ["horovod", "mirrored", "multi_worker"], "Strategies.")
flags.DEFINE_integer("num_workers", 2, "Workers of every job.", lower_bound=2)
flags.DEFINE_enum("model", "mnist_cnn", choices.MODELS, "Model to train.")
flags.DEFINE_integer("batch_size", 64, "Batch size per worker.", lower_bound=1)
flags.DEFINE_integer("warmup_steps", 30, "Global steps each job trains before its step is "
                     "measured.", lower_bound=0)
flags.DEFINE_float("window_secs", 20, "Seconds each job's step is measured for.",
                   lower_bound=2)
flags.DEFINE_float("timeout_secs", 600, "A job not measured (a profiled job: not ended) this "
                   "long after its start is stopped.", lower_bound=10)
flags.DEFINE_integer("steps", 200, "Training steps of each profiled job.", lower_bound=60)
flags.DEFINE_integer("profile_steps", 20, "Steps in the profiled window, which ends 20 "
                     "steps before the last.", lower_bound=2)
flags.DEFINE_integer("threads_per_worker", 1, "TensorFlow intra-op threads per worker.",
                     lower_bound=0)
flags.DEFINE_string("output_dir", "/tmp/estimator_dist_breakdown", "Where results go.")

_SYNCHRONOUS = ("horovod", "mirrored", "multi_worker")
_ALLREDUCE = re.compile(r"rank \d+: all-reduce of [\d.]+ MB: ([\d.]+) ms wall")


def _step_secs(row):
  """Seconds per global step of a measured job (of its copies, for the limit)."""
  if not row["rate"] or not row["examples_per_step"]:
    raise RuntimeError(f"{row['strategy']} on {row['workers']} gave no measurement: "
                       f"{row['failure']}")
  return row["examples_per_step"] / row["rate"]


def _exchange_alone_secs(f):
  """The wall time of one all-reduce of the model's gradients between f.num_workers
  ranks of this machine, the slowest rank's."""
  from benchmarks import models  # pylint: disable=g-import-not-at-top  (imports TensorFlow)
  from estimator_dist.strategies import horovod_options  # pylint: disable=g-import-not-at-top
  floats = models.parameter_bytes(f.model) // 4
  command = [sys.executable, "-m", "estimator_dist.jobs.horovodrun_entry", "-np",
             str(f.num_workers), "-H", f"localhost:{f.num_workers}", sys.executable, "-m",
             "benchmarks.allreduce_cost", f"--floats={floats}"]
  done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                        env={**os.environ, **horovod_options.CPU_DEFAULTS},
                        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  walls = [float(ms) for ms in _ALLREDUCE.findall(done.stdout)]
  if done.returncode != 0 or len(walls) != f.num_workers:
    raise RuntimeError(f"allreduce_cost failed ({done.returncode}):\n{done.stdout[-2000:]}"
                       f"{done.stderr[-2000:]}")
  return max(walls) / 1000


def _profiled(strategy, settings, f):
  """The breakdown of the chief's profiled window under `strategy`, in a job that trains
  f.steps to its end."""
  from benchmarks import strategy_jobs  # pylint: disable=g-import-not-at-top
  last = f.steps - 20
  timeline = os.path.join(settings.output_dir, f"timeline-{strategy}.json")
  extra = [f"--profile_steps={last - f.profile_steps}:{last}"]
  if strategy == "horovod":
    extra.append(f"--hvd_timeline={timeline}")
  found = strategy_jobs.run(strategy_jobs.TOOLKIT, strategy, f.num_workers, settings,
                            label="profiled", extra=extra,
                            train_steps_to_end=f.steps)
  traces = sorted(glob.glob(os.path.join(found["model_dir"], "plugins", "profile", "*",
                                         "*.xplane.pb")))
  if not traces:
    raise RuntimeError(f"{strategy} gave no profile: {found['failure'] or found['model_dir']}")
  trace = breakdown.read_trace(traces[0])
  peer = (breakdown.peer_waits(trace, breakdown.horovod_negotiations(timeline))
          if strategy == "horovod" else ())
  return breakdown.of_window(trace, peer=peer)


def markdown(rows):
  head = ["strategy", "step", "of the limit", "profiled step",
          *[f"{p} (profiled)" for p in breakdown.PARTS]]
  lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
  for r in rows:
    cells = [r["strategy"], f"{1000 * r['step']:.1f} ms", f"{r['limit'] / r['step']:.2f}",
             f"{1000 * r['profiled']['step']:.1f} ms",
             *[f"{1000 * r['profiled'][p]:.1f} ms" for p in breakdown.PARTS]]
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def chart(rows, independent, path):
  """Stacked bars of each strategy's profiled step, its step and the limit."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, ax = plt.subplots(figsize=(8, 1.2 + 0.8 * len(rows)))
  names = [r["strategy"] for r in rows]
  left = [0.0] * len(rows)
  for part in breakdown.PARTS:
    widths = [1000 * r["profiled"][part] for r in rows]
    ax.barh(names, widths, left=left, label=part)
    left = [a + b for a, b in zip(left, widths)]
  for i, r in enumerate(rows):
    ax.plot([1000 * r["step"]] * 2, [i - 0.4, i + 0.4], color="black", linewidth=2)
    ax.plot([1000 * r["limit"]] * 2, [i - 0.4, i + 0.4], color="gray", linestyle="--")
  ax.axvline(1000 * independent, color="gray", linewidth=1)
  ax.set_xlabel("ms per step (bars: profiled chief; black: step unprofiled; dashed: "
                "limit; gray: independent workers)", fontsize=8)
  ax.invert_yaxis()
  ax.legend(fontsize=8, ncol=len(breakdown.PARTS), loc="upper center",
            bbox_to_anchor=(0.5, -0.35))
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def main(_):
  f = flags.FLAGS
  unknown = [s for s in f.strategies if s not in _SYNCHRONOUS]
  if unknown:
    raise app.UsageError(f"--strategies takes {', '.join(_SYNCHRONOUS)}, not {unknown}")
  from benchmarks import strategy_jobs  # pylint: disable=g-import-not-at-top
  from estimator_dist.bench import measured_job  # pylint: disable=g-import-not-at-top
  settings = strategy_jobs.Settings(
      model=f.model, data="synthetic", batch_size=f.batch_size,
      threads_per_worker=f.threads_per_worker, output_dir=os.path.abspath(f.output_dir),
      window=measured_job.Window(warmup_steps=f.warmup_steps, window_secs=f.window_secs,
                                 timeout_secs=f.timeout_secs))
  independent = _step_secs(strategy_jobs.run(strategy_jobs.LIMIT, strategy_jobs.LIMIT,
                                             f.num_workers, settings))
  exchange = _exchange_alone_secs(f)
  print(command_line.line(f"independent workers: {1000 * independent:.1f} ms a step; one "
                          f"all-reduce alone: {1000 * exchange:.1f} ms", "bench"), flush=True)
  rows = []
  for strategy in f.strategies:
    step = _step_secs(strategy_jobs.run(strategy_jobs.TOOLKIT, strategy, f.num_workers,
                                        settings))
    rows.append({"strategy": strategy, "step": step, "limit": independent + exchange,
                 "profiled": _profiled(strategy, settings, f)})
    print(command_line.line(f"{strategy}: {1000 * step:.1f} ms a step", "bench"), flush=True)
  print(markdown(rows))
  with open(os.path.join(settings.output_dir, "results.json"), "w") as out:
    json.dump({"independent": independent, "exchange_alone": exchange, "rows": rows,
               "settings": dataclasses.asdict(settings)}, out, indent=1)
  chart(rows, independent, os.path.join(settings.output_dir, "breakdown.png"))
  return 0


if __name__ == "__main__":
  app.run(main)
