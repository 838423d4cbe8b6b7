"""What a sweep costs and what pruning saves, measured side by side on this machine.

  python benchmarks/sweep_bench.py --output_dir=/tmp/sweep_bench

1. Efficiency: rounds x P trials run by `estimator-dist sweep --parallel=P` against the
   same trainings (same program and values) started by the launcher, P at once, round
   after round, each pinned to its own CPUs as the sweep pins them. efficiency = the
   independent trainings' wall time / the sweep's (1.0: the sweep costs nothing on top).
2. Pruning: the same TPE sweep (same seed, same trials) without and with the median
   pruner. Compute is trial-steps (the global steps every trial trained, summed); the
   ratio is what the pruned sweep spent over what the unpruned one spent, reported with
   both sweeps' best accuracy, and the trial-steps each spent until it first reached the
   accuracy both reached.
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
_STEPS = flags.DEFINE_integer("steps", 3000, "Global steps of each trial (six evaluations).")
_TRIALS = flags.DEFINE_integer("trials", 12, "Trials of each pruning sweep.")
_SEED = flags.DEFINE_integer("seed", 1, "The TPE sampler's seed.")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Efficiency: trials per CPU share.")

_PROGRAM = ["-m", "model_zoo.mnist_dnn", "--eval_throttle_secs=0"]
_SPACE = "learning_rate=loguniform(1e-5,1e0)"


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
          f"--save_checkpoints_steps={_STEPS.value // 6}"]


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


def _trial_steps(sweep_dir):
  with open(os.path.join(sweep_dir, "sweep.json")) as f:
    trials = sorted(json.load(f)["trials"], key=lambda t: t["number"])
  return [(t["steps"] or 0, t["value"], t["state"]) for t in trials]


def _steps_to(trials, target):
  spent = 0
  for steps, value, _ in trials:
    spent += steps
    if value is not None and value >= target:
      return spent
  return None


def pruning(out):
  common = [f"--space={_SPACE}", "--sampler=tpe", f"--seed={_SEED.value}",
            f"--trials={_TRIALS.value}", f"--parallel={_PARALLEL.value}"]
  runs = {}
  for name, extra in (("unpruned", []), ("pruned", ["--pruner=median",
                                                   "--prune_after_trials=3"])):
    seconds = _timed([(_sweep(f"{out}/{name}", *common, *extra), None)], os.getcwd())
    runs[name] = (seconds, _trial_steps(f"{out}/{name}"))
  return runs


def main(_):
  out = _OUTPUT_DIR.value
  os.makedirs(out, exist_ok=True)
  independent, swept = efficiency(out)
  runs = pruning(out)
  best = {n: max((v for _, v, _ in t if v is not None), default=0.0)
          for n, (_, t) in runs.items()}
  target = min(best.values())
  rows = {n: {"seconds": round(s, 1), "trial_steps": sum(st for st, _, _ in t),
              "best_accuracy": best[n], "steps_to_target": _steps_to(t, target),
              "pruned_trials": sum(state == "pruned" for _, _, state in t)}
          for n, (s, t) in runs.items()}
  results = {
      "parallel": _PARALLEL.value, "rounds": _ROUNDS.value, "steps": _STEPS.value,
      "efficiency": {"independent_secs": round(independent, 1), "sweep_secs": round(swept, 1),
                     "efficiency": round(independent / swept, 3)},
      "pruning": {**rows, "target_accuracy": target,
                  "compute_ratio": round(rows["pruned"]["trial_steps"] /
                                         rows["unpruned"]["trial_steps"], 3)}}
  with open(os.path.join(out, "sweep_bench.json"), "w") as f:
    json.dump(results, f, indent=2)
  e, q = results["efficiency"], results["pruning"]
  print(f"| {_ROUNDS.value} x P={_PARALLEL.value} trials of {_STEPS.value} steps | independent "
        f"{e['independent_secs']} s"
        f" | sweep {e['sweep_secs']} s | efficiency {e['efficiency']} |")
  print("| sweep | seconds | trial-steps | pruned trials | best accuracy | trial-steps to "
        f"{target:.4f} |\n|---|---|---|---|---|---|")
  for name in ("unpruned", "pruned"):
    r = rows[name]
    print(f"| {name} | {r['seconds']} | {r['trial_steps']} | {r['pruned_trials']} | "
          f"{r['best_accuracy']:.4f} | {r['steps_to_target']} |")
  print(f"compute ratio (pruned / unpruned trial-steps): {q['compute_ratio']}")


if __name__ == "__main__":
  app.run(main)
