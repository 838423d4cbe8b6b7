"""A sweep's results, for people: a markdown table, sweep.json, two charts, and HParams.

In the sweep dir: `report.md` (every trial's values, metric, state, steps and seconds,
then the best values, then the points of a grid or --zip that no trial finished),
`sweep.json` (the same as data), `history.png` (optimisation history) and
`parallel_coordinates.png`, and TensorBoard HParams summaries (`hparams_summary`).
"""

import json
import os
import warnings

import optuna

from estimator_dist.experiments import fixed_points
from estimator_dist.experiments import pbt_report
from estimator_dist.outputs import best_checkpoints

REPORT, DATA = "report.md", "sweep.json"
CHARTS = {"history.png": "plot_optimization_history",
          "parallel_coordinates.png": "plot_parallel_coordinate"}


def summarize(study, *, options, out=None):
  """Writes the report files; returns the sweep.json data (and prints the table to `out`)."""
  trials = [t for t in study.get_trials() if t.state != optuna.trial.TrialState.WAITING
            and not t.user_attrs.get("surplus")]
  rows = [_row(t) for t in trials]
  complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
  best = study.best_trial if complete else None
  population = pbt_report.lineage(study, options) if options.scheduler == "pbt" else None
  if population:  # The best member at the end, not the best segment on the way.
    best = next((t for t in trials if t.number == population["best"]), None)
  data = {"metric": options.metric, "direction": options.direction,
          "storage": options.storage_url, "trials": rows,
          "best": _row(best) if best else None, "failed": _failed(study, options),
          **({"pbt": population} if population else {})}
  with open(os.path.join(options.sweep_dir, DATA), "w") as f:
    json.dump(data, f, indent=2)
  table = _markdown(data)
  with open(os.path.join(options.sweep_dir, REPORT), "w") as f:
    f.write(table)
  if complete:
    _charts(study, options, population)
  # TensorBoard only when a report is written: not in a sweep's --help.
  from estimator_dist.experiments import hparams_summary  # pylint: disable=g-import-not-at-top
  hparams_summary.write(trials, options)
  if out is not None:
    out.write(table)
    out.flush()
  return data


def state_of(trial):
  """How a trial stands: complete, pruned, diverged, fail, running or waiting."""
  return "diverged" if trial.user_attrs.get("diverged") else trial.state.name.lower()


def _row(trial):
  model_dir = trial.user_attrs.get("model_dir")
  return {"number": trial.number, "params": trial.params, "value": trial.value,
          "state": state_of(trial),
          "steps": trial.user_attrs.get("steps"), "seconds": trial.user_attrs.get("seconds"),
          "model_dir": model_dir, "best_checkpoint": _best_checkpoint(model_dir)}


def _best_checkpoint(model_dir):
  """The best checkpoint the trial's job kept (--keep_best_checkpoints), else None."""
  if not model_dir:
    return None
  directory = os.path.join(model_dir, best_checkpoints.DIRECTORY)
  kept = best_checkpoints.read(directory)
  return os.path.join(directory, kept[0]["checkpoint"]) if kept else None


def _failed(study, options):
  """A row for each point of a grid or --zip none of whose trials finished: its last
  trial, and the line that said why it failed (where its job failed, not its runner)."""
  if not options.fixed_points:
    return []
  return [{"number": trials[-1].number, "params": trials[-1].params,
           "failure": trials[-1].user_attrs.get("failure"),
           "model_dir": trials[-1].user_attrs.get("model_dir")}
          for trials in fixed_points.failed_points(study).values() if trials]


def _markdown(data):
  names = sorted({name for row in data["trials"] for name in row["params"]})
  head = ["trial", *names, data["metric"], "state", "steps", "seconds"]
  lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for row in data["trials"]:
    cells = [row["number"], *(row["params"].get(n, "") for n in names),
             "" if row["value"] is None else f"{row['value']:.4f}", row["state"],
             row["steps"] or "", row["seconds"] or ""]
    lines.append("| " + " | ".join(str(c) for c in cells) + " |")
  best = data["best"]
  lines += ["", (f"Best ({data['direction']} eval {data['metric']}): trial {best['number']}, "
                 f"{data['metric']} {best['value']:.4f}, " +
                 " ".join(f"--{k}={v}" for k, v in sorted(best["params"].items()))
                 if best else "No trial completed.")]
  if "pbt" in data:
    lines += pbt_report.markdown(data["pbt"], data["metric"])
  kept = [row for row in data["trials"] if row["best_checkpoint"]]
  if kept:
    lines += ["", "Best checkpoint of each trial (--keep_best_checkpoints):"]
    lines += [f"- trial {row['number']}: {row['best_checkpoint']}" for row in kept]
  if data["failed"]:
    lines += ["", "Failed points (no trial of theirs finished; a sweep run again retries "
                  "them unless --noretry_failed):"]
    lines += [f"- {row['failure'] or _failed_trial(row)}" for row in data["failed"]]
  return "\n".join(lines) + "\n"


def _failed_trial(row):
  flags = " ".join(f"--{k}={v}" for k, v in sorted(row["params"].items()))
  return f"trial {row['number']} failed: {flags} (model_dir: {row['model_dir']})"


def _charts(study, options, population):
  # matplotlib only when a report is drawn: not in a sweep's --help or its trials.
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")  # Files only; no display.
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  sweep_dir = options.sweep_dir
  if population:
    pbt_report.draw(population, options=options, pyplot=pyplot)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    for name, plot in CHARTS.items():
      axes = getattr(optuna.visualization.matplotlib, plot)(study)
      axes.figure.set_size_inches(9, 5)
      axes.figure.savefig(os.path.join(sweep_dir, name), dpi=100, bbox_inches="tight")
      pyplot.close(axes.figure)
