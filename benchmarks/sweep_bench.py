"""What a sweep costs and what pruning and PBT save, measured side by side on this machine.

  python benchmarks/sweep_bench.py --output_dir=/tmp/sweep_bench

1. Efficiency: rounds x P trials run by `estimator-dist sweep --parallel=P` against the
   same trainings (same program and values) started by the launcher, P at once, round
   after round, each pinned to its own CPUs as the sweep pins them. efficiency = the
   independent trainings' wall time / the sweep's (1.0: the sweep costs nothing on top).
2. Spending: on one space (the DNN's momentum-SGD learning rate over five decades, where
   a rate that is good early is too large late), the same TPE sweep (same seed, same
   number of trials) with no pruner, median, hyperband and asha, and a PBT population.
   Compute is trial-steps (the global steps every trial, or PBT segment, trained,
   summed). For each: the best accuracy, the trial-steps spent, their ratio to the
   unpruned sweep's, the trial-steps spent (in trial order) until the best so far came
   within 0.005 of the unpruned sweep's best, and a chart of the best so far against the
   trial-steps spent (sweep_spending.png, of the first seed). PBT is also held against the
   unpruned sweep's best fixed-value trial among as many trial-steps as PBT spent, and its
   wall time against an unpruned sweep of the same trial-steps (`none_as_pbt`: the first
   population-many trials of the unpruned sweep, run as a sweep of their own).
   With several --seeds, each sweep's mean and range over them.
3. A trial's start: the seconds a trial (or PBT segment) costs beside its steps, the
   intercept of a line fitted to every trial's wall seconds against the steps it trained.

  python benchmarks/sweep_bench.py --efficiency=false --sweeps=none,asha,pbt --seeds=1,2,3
"""

import json
import os
import subprocess
import sys
import time

from absl import app
from absl import flags

_OUTPUT_DIR = flags.DEFINE_string("output_dir", "/tmp/sweep_bench", "Sweeps and results.")
_PARALLEL = flags.DEFINE_integer("parallel", 2, "P: trials at once.")
# A pruner decides from an evaluation (Estimator builds its graph again for each: about
# 1.5 s here) and then every task agrees on the step to stop at: some 2000 DNN steps of
# about 1 ms. Trials of 20000 steps are long enough for that to matter little, as for a
# real model's steps.
_STEPS = flags.DEFINE_integer("steps", 20000, "Global steps of each trial (eight "
                              "evaluations).")
_TRIALS = flags.DEFINE_integer("trials", 8, "Trials of each pruning sweep.")
_SEEDS = flags.DEFINE_list("seeds", ["1"], "The TPE sampler's and PBT's seeds: the "
                           "spending sweeps run once for each.")
_SWEEP_NAMES = flags.DEFINE_list("sweeps", ["none", "median", "hyperband", "asha", "pbt"],
                                 "Spending sweeps to run (none, the unpruned, always runs).")
_EFFICIENCY = flags.DEFINE_boolean("efficiency", True, "Also measure the sweep's efficiency.")
_POPULATION = flags.DEFINE_integer("population", 4, "PBT's members.")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Efficiency: trials per CPU share.")
_PBT_INTERVAL = flags.DEFINE_integer(
    "pbt_interval_steps", None, "PBT's steps between exploits (default: an evaluation's, "
    "--steps / 8); with --steps, the length of its segments.")

_PROGRAM = ["-m", "model_zoo.mnist_dnn", "--eval_throttle_secs=0"]
_SPACE = "learning_rate=loguniform(1e-5,1e0)"
_EVALUATIONS = 8
_WITHIN = 0.005  # Of the unpruned sweep's best accuracy: the same best.
_RUNGS = ["--min_resource_steps={interval}", "--reduction_factor=3"]
_SWEEPS = {  # name: its flags beside the space and the seed; {interval}: an evaluation's steps.
    "none": ["--sampler=tpe"],
    # PBT's trial-steps unpruned: population-many trials (the unpruned sweep's first ones).
    "none_as_pbt": ["--sampler=tpe"],
    "median": ["--sampler=tpe", "--pruner=median", "--prune_after_trials=3"],
    "hyperband": ["--sampler=tpe", "--pruner=hyperband", *_RUNGS],
    "asha": ["--sampler=tpe", "--pruner=asha", *_RUNGS],
    "pbt": ["--scheduler=pbt", "--population={population}",
            "--pbt_interval_steps={pbt_interval}"],
}


def _timed(commands, cwd):
  """Wall seconds for `commands` started at once; fails on any failure."""
  start = time.monotonic()
  procs = [subprocess.Popen(c, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            preexec_fn=preexec) for c, preexec in commands]
  codes = [p.wait() for p in procs]
  if any(codes):
    raise SystemExit(f"a run failed: exit codes {codes} of {[c for c, _ in commands]}")
  return time.monotonic() - start


def _sweep(sweep_dir, *flags_):
  return [sys.executable, "-m", "estimator_dist.cli", "sweep", f"--sweep_dir={sweep_dir}",
          *flags_, "--", *_program()]


def _program():
  return [sys.executable, *_PROGRAM, f"--train_steps={_STEPS.value}",
          f"--save_checkpoints_steps={_STEPS.value // _EVALUATIONS}"]


def efficiency(out):
  """(independent seconds, sweep seconds) for `rounds` x P trainings: P at once, one round
  after another, against a sweep of the same rounds x P trials with --parallel=P."""
  p, rounds = _PARALLEL.value, _ROUNDS.value
  rates = [round(0.02 * (i + 1), 2) for i in range(p * rounds)]
  cpus = sorted(os.sched_getaffinity(0))
  per = len(cpus) // p
  seconds_independent = 0.0
  for r in range(rounds):
    independent = []
    for i in range(p):
      share, rate = set(cpus[i * per:(i + 1) * per]), rates[r * p + i]
      command = [sys.executable, "-m", "estimator_dist.launch", "--strategy=local",
                 "--num_workers=1", f"--model_dir={out}/independent_{r}_{i}", "--",
                 *_program(), f"--learning_rate={rate}"]
      independent.append((command, lambda s=share: os.sched_setaffinity(0, s)))
    seconds_independent += _timed(independent, os.getcwd())
  space = "learning_rate=choice(" + ",".join(str(r) for r in rates) + ")"
  seconds_sweep = _timed([(_sweep(f"{out}/parallel", f"--space={space}", "--sampler=grid",
                                   f"--parallel={p}", f"--trials={len(rates)}"), None)],
                         os.getcwd())
  return seconds_independent, seconds_sweep


def _trials(sweep_dir):
  """[(steps trained, value, state)] of the sweep's trials (PBT: segments) in trial order."""
  with open(os.path.join(sweep_dir, "sweep.json")) as f:
    data = json.load(f)
  starts = {s["trial"]: s["start_step"] for m in data.get("pbt", {}).get("members", [])
            for s in m["segments"]}
  return [((t["steps"] or 0) - starts.get(t["number"], 0), t["value"], t["state"])
          for t in sorted(data["trials"], key=lambda t: t["number"])]


def _curve(trials):
  """[(trial-steps spent, best accuracy so far)] after each trial."""
  spent, best, curve = 0, 0.0, []
  for steps, value, _ in trials:
    spent += steps
    best = max(best, value if value is not None else 0.0)
    curve.append((spent, best))
  return curve


def spending(out, seed):
  """{name: (seconds, trials)} of each sweep of --sweeps with `seed`."""
  runs = {}
  for name, extra in _SWEEPS.items():
    wanted = ("pbt" in _SWEEP_NAMES.value if name == "none_as_pbt"
              else name == "none" or name in _SWEEP_NAMES.value)
    if not wanted:
      continue
    interval = _STEPS.value // _EVALUATIONS
    flags_ = [f.format(interval=interval, population=_POPULATION.value,
                       pbt_interval=_PBT_INTERVAL.value or interval) for f in extra]
    count = _POPULATION.value if name == "none_as_pbt" else _TRIALS.value
    trials = [] if name == "pbt" else [f"--trials={count}"]
    seconds = _timed([(_sweep(f"{out}/{name}", f"--space={_SPACE}", f"--seed={seed}",
                              f"--parallel={_PARALLEL.value}", "--progress_secs=0", *trials,
                              *flags_), None)], os.getcwd())
    runs[name] = (seconds, _trials(f"{out}/{name}"))
  return runs


def start_seconds(sweep_dirs):
  """The seconds a trial costs beside its steps: the intercept of the least-squares line
  of every finished trial's wall seconds against the steps it trained."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  points = []
  for sweep_dir in sweep_dirs:
    with open(os.path.join(sweep_dir, "sweep.json")) as f:
      data = json.load(f)
    starts = {s["trial"]: s["start_step"] for m in data.get("pbt", {}).get("members", [])
              for s in m["segments"]}
    points += [(t["steps"] - starts.get(t["number"], 0), t["seconds"]) for t in data["trials"]
               if t["state"] in ("complete", "pruned") and t.get("steps") and t.get("seconds")]
  steps, seconds = np.array(points, dtype=float).T
  if len(set(steps)) < 2:  # Trials of one length (no pruning, no new job per segment).
    return None, None
  slope, intercept = np.polyfit(steps, seconds, 1)
  return round(float(intercept), 2), round(float(slope) * 1000, 3)


def segment_seconds(sweep_dir, ms_per_step):
  """The mean seconds a PBT segment costs beside its steps (at `ms_per_step`)."""
  if ms_per_step is None:
    return None
  with open(os.path.join(sweep_dir, "sweep.json")) as f:
    data = json.load(f)
  seconds = {t["number"]: t.get("seconds") for t in data["trials"]}
  beside = [seconds[s["trial"]] - (s["steps"] - s["start_step"]) * ms_per_step / 1000
            for m in data["pbt"]["members"] for s in m["segments"] if seconds[s["trial"]]]
  return round(sum(beside) / len(beside), 2) if beside else None


def _rows(runs):
  """The table of one seed's sweeps, and the best fixed-value accuracy within PBT's steps."""
  curves = {name: _curve(trials) for name, (_, trials) in runs.items()}
  target = round(curves["none"][-1][1] - _WITHIN, 4)
  total = sum(steps for steps, _, _ in runs["none"][1])
  rows = {name: {"seconds": round(seconds, 1), "trial_steps": curves[name][-1][0],
                 "ratio": round(curves[name][-1][0] / total, 3),
                 "seconds_ratio": round(seconds / runs["none"][0], 3),
                 "best_accuracy": curves[name][-1][1], "target_accuracy": target,
                 "steps_to_target": next((s for s, b in curves[name] if b >= target), None),
                 "pruned_trials": sum(state == "pruned" for _, _, state in trials)}
          for name, (seconds, trials) in runs.items()}
  for name in rows:
    if name == "pbt":
      rows[name]["best_fixed_within"] = max(
          (b for s, b in curves["none"] if s <= rows[name]["trial_steps"]), default=None)
      rows[name]["seconds_of_same_steps"] = round(
          rows[name]["seconds"] / rows["none_as_pbt"]["seconds"], 3)
  return rows, curves


def _chart(curves, path):
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  figure, axes = pyplot.subplots(figsize=(8, 4.5))
  for name, curve in curves.items():
    axes.step([0] + [c[0] for c in curve], [0.0] + [c[1] for c in curve], where="post",
              label=name)
  axes.set_ylim(0.9, 1.0)
  axes.set_xlabel("trial-steps spent")
  axes.set_ylabel("best eval accuracy so far")
  axes.legend()
  figure.savefig(path, dpi=100, bbox_inches="tight")
  pyplot.close(figure)


def _spread(values):
  values = [v for v in values if v is not None]
  if not values:
    return "-"
  mean = sum(values) / len(values)
  return f"{mean:.4g} ({min(values):.4g}-{max(values):.4g})" if len(values) > 1 else f"{mean:.4g}"


def main(_):
  out = _OUTPUT_DIR.value
  os.makedirs(out, exist_ok=True)
  results = {"parallel": _PARALLEL.value, "rounds": _ROUNDS.value, "steps": _STEPS.value,
             "seeds": {}}
  if _EFFICIENCY.value:
    independent, swept = efficiency(out)
    results["efficiency"] = {"independent_secs": round(independent, 1),
                             "sweep_secs": round(swept, 1),
                             "efficiency": round(independent / swept, 3)}
    e = results["efficiency"]
    print(f"| {_ROUNDS.value} x P={_PARALLEL.value} trials of {_STEPS.value} steps | "
          f"independent {e['independent_secs']} s | sweep {e['sweep_secs']} s | efficiency "
          f"{e['efficiency']} |")
  for number, seed in enumerate(_SEEDS.value):
    seed_out = out if len(_SEEDS.value) == 1 else os.path.join(out, f"seed_{seed}")
    runs = spending(seed_out, seed)
    rows, curves = _rows(runs)
    start, step_ms = start_seconds([os.path.join(seed_out, name) for name in runs])
    segments = {name: segment_seconds(os.path.join(seed_out, name), step_ms)
                for name in runs if name == "pbt"}
    results["seeds"][seed] = {"spending": rows, "trial_start_secs": start,
                              "ms_per_step": step_ms, "curves": curves,
                              "segment_start_secs": segments}
    if not number:
      _chart(curves, os.path.join(out, "sweep_spending.png"))
    target = rows["none"]["target_accuracy"]
    if start is None:
      print(f"seed {seed}: every trial trained as many steps: no fit of a trial's start "
            f"(add a pruner's or PBT's sweep)")
    else:
      print(f"seed {seed}: a trial costs {start} s beside its steps ({step_ms} ms a step)"
            + "".join(f"; a {name} segment {secs} s" for name, secs in segments.items()))
    print(f"| sweep | seconds | trial-steps | of unpruned | pruned | best accuracy | "
          f"trial-steps to {target:.4f} |\n|---|---|---|---|---|---|---|")
    for name, r in rows.items():
      print(f"| {name} | {r['seconds']} | {r['trial_steps']} | {r['ratio']} | "
            f"{r['pruned_trials']} | {r['best_accuracy']:.4f} | {r['steps_to_target']} |")
    for name in (name for name in rows if name == "pbt"):
      print(f"best fixed-value trial within {name}'s {rows[name]['trial_steps']} "
            f"trial-steps: {rows[name]['best_fixed_within']}; its wall time / the unpruned "
            f"sweep's of the same trial-steps: {rows[name]['seconds_of_same_steps']}")
  with open(os.path.join(out, "sweep_bench.json"), "w") as f:
    json.dump(results, f, indent=2)
  seeds = results["seeds"].values()
  print(f"over seeds {','.join(_SEEDS.value)}: mean (range)")
  print("| sweep | wall / unpruned | trial-steps / unpruned | wall per trial-step / "
        "unpruned | best accuracy | best fixed-value within its trial-steps |\n"
        "|---|---|---|---|---|---|")
  for name in next(iter(seeds))["spending"]:
    rows = [s["spending"][name] for s in seeds]
    print(f"| {name} | {_spread([r['seconds_ratio'] for r in rows])} | "
          f"{_spread([r['ratio'] for r in rows])} | "
          f"{_spread([r['seconds_ratio'] / r['ratio'] for r in rows])} | "
          f"{_spread([r['best_accuracy'] for r in rows])} | "
          f"{_spread([r.get('best_fixed_within') for r in rows])} |")
  for name in (name for name in next(iter(seeds))["spending"] if name == "pbt"):
    print(f"{name}'s wall time / the unpruned sweep's of the same trial-steps: "
          f"{_spread([s['spending'][name]['seconds_of_same_steps'] for s in seeds])}")
  print(f"a trial's start: {_spread([s['trial_start_secs'] for s in seeds])} s")


if __name__ == "__main__":
  app.run(main)
