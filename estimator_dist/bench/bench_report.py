"""What `estimator-dist bench` says of its measured jobs: the rows, the table, the
recommendation with its reason, results.json and results.png (matplotlib, behind the
charts extra)."""

import dataclasses
import json
import os
import platform
import statistics
from typing import Tuple

from estimator_dist.bench import measured_job
from estimator_dist.bench import projection

LIMIT = projection.INDEPENDENT
RESULTS, CHART = "results.json", "results.png"


def row(strategy, workers, measured):
  """The row of a job: `measured`, its Measured (several for the limit's copies, whose
  rates add up)."""
  # A copy's own failure before the word that it was stopped for another's.
  failures = sorted((m.failure for m in measured if m.failure),
                    key=lambda failure: failure.startswith(measured_job.STOPPED_FOR_ANOTHER))
  known_batch = all(m.examples_per_step for m in measured)
  found = {"strategy": strategy, "workers": workers, "rate": None, "spread": None,
           "unit": "examples/s" if known_batch else "steps/s", "failure": failures[0]
           if failures else "", "examples_per_step": sum(m.examples_per_step or 0
                                                         for m in measured) or None,
           "trainable_bytes": max(m.trainable_bytes or 0 for m in measured) or None,
           "cut_short": next((m.cut_short for m in measured if m.cut_short), "")}
  if failures:
    return found
  rates = [m.rate if known_batch else m.steps_per_sec for m in measured]
  return {**found, "rate": sum(rates), "spread": spread(measured),
          "window_secs": min(m.seconds for m in measured)}


def spread(measured):
  """The range of the rates of the window's parts over their median, the largest of the
  jobs' `measured`; None under three parts (too few to say)."""
  found = [(max(parts) - min(parts)) / statistics.median(parts)
           for parts in (m.window_rates() for m in measured)
           if len(parts) >= 3 and statistics.median(parts) > 0]
  return max(found) if len(found) == len(measured) else None


def _percent(value):
  return f"{100 * value:.0f} %" if value is not None else "–"


def name(found):
  if found["strategy"] == LIMIT:
    return f"{found['workers']} independent cop{'y' if found['workers'] == 1 else 'ies'}"
  return f"{found['strategy']} on {found['workers']} worker{'s' * (found['workers'] > 1)}"


def describe(found, label=None):
  """One line of a measured job (`label`: its name, if not `name`'s)."""
  label = label or name(found)
  if found["failure"]:
    return f"{label}: not measured: {found['failure']}"
  return (f"{label}: {rate(found['rate'])} {found['unit']} (spread "
          f"{_percent(found['spread'])} over {found['window_secs']:.0f} s"
          + (f"; cut short, {found['cut_short']})" if found["cut_short"] else ")"))


def rate(value):
  """A rate as people read it: 0.53, 12.4, 3,562."""
  return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def cpu_model():
  """The CPU's model name, as /proc/cpuinfo gives it."""
  try:
    with open("/proc/cpuinfo") as f:
      return next((line.split(":", 1)[1].strip() for line in f
                   if line.startswith("model name")), platform.processor())
  except OSError:
    return platform.processor()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Report:
  rows: Tuple[dict, ...]
  program: Tuple[str, ...]
  window: measured_job.Window
  num_ps: int = 1  # The parameter_server jobs'.

  def _limit_row(self, workers, unit):
    return next((r for r in self.rows if r["strategy"] == LIMIT and r["workers"] == workers
                 and r["rate"] and r["unit"] == unit), None)

  def _limit(self, workers, unit):
    found = self._limit_row(workers, unit)
    return found["rate"] if found else None

  def compared(self):
    """The rows with their share of the limit (`of_limit`), speed-up over one copy of the
    program alone (`speedup`), and the milliseconds a worker's step takes beyond the same
    work in the independent copies (`extra_step_ms`: the exchange, and waiting for the
    slowest), where measured."""
    out = []
    for r in self.rows:
      limit, alone = self._limit_row(r["workers"], r["unit"]), self._limit(1, r["unit"])
      extra = None
      if r["rate"] and limit and r["strategy"] != LIMIT and r["unit"] == "examples/s":
        # A worker's step of b examples: W b / rate here, W b / limit's rate in copies.
        extra = 1000 * limit["examples_per_step"] * (1 / r["rate"] - 1 / limit["rate"])
      out.append({**r, "of_limit": r["rate"] / limit["rate"] if r["rate"] and limit else None,
                  "speedup": r["rate"] / alone if r["rate"] and alone else None,
                  "extra_step_ms": extra})
    return out

  def table(self):
    lines = [f"{'job':34s} {'rate':>20s} {'spread':>7s} {'of limit':>9s} {'× alone':>8s} "
             f"{'step +ms':>9s}"]
    for r in self.compared():
      if r["failure"]:
        lines.append(f"{name(r):34s} {'not measured':>18s}")
        continue
      of_limit = r["of_limit"] if r["strategy"] != LIMIT else None
      lines.append((f"{name(r):34s} {rate(r['rate']):>9s} {r['unit']:>10s} "
                    f"{_percent(r['spread']):>7s} "
                    + (f"{100 * of_limit:>7.0f} % " if of_limit else f"{'':>9s} ")
                    + (f"{r['speedup']:>7.2f}×" if r["speedup"] else f"{'':>8s}")
                    + (f" {r['extra_step_ms']:>9.1f}" if r["extra_step_ms"] is not None
                       else "")).rstrip())
    lines.append(f"(CPU: {cpu_model()}, {len(os.sched_getaffinity(0))} CPUs; spread: the "
                 f"range of the rates of the window's parts over their median; step +ms: "
                 f"what a worker's step takes beyond the same work in independent copies, "
                 f"the exchange and the wait for the slowest)")
    return "\n".join(lines)

  def recommendation(self):
    """One line: the fastest strategy and worker count, and why; one process (the one
    independent copy, strategy local) where none is faster."""
    measured = [r for r in self.compared() if r["rate"] and r["strategy"] != LIMIT]
    if not measured:
      return "no strategy was measured: see each job's line above and its launch.log"
    # Steps/s and examples/s do not compare: the jobs of the most common unit.
    units = [r["unit"] for r in measured]
    unit = max(set(units), key=units.count)
    measured = sorted((r for r in measured if r["unit"] == unit), key=lambda r: r["rate"],
                      reverse=True)
    best, alone = measured[0], self._limit(1, unit)
    if alone and best["rate"] < alone:  # The one copy: a job of strategy local.
      return (f"recommended: one process (--strategy=local), {rate(alone)} {unit}: no "
              f"strategy measured trains this program faster on this machine; the fastest, "
              f"{name(best)}, is {100 * (1 - best['rate'] / alone):.0f} % slower")
    said = [f"recommended: {name(best)}, {rate(best['rate'])} {best['unit']}"]
    if best["speedup"]:
      said.append(f"{best['speedup']:.2f}× one process alone")
    if best["of_limit"] and best["workers"] > 1:
      said.append(f"{100 * best['of_limit']:.0f} % of {best['workers']} independent copies")
    line = ", ".join(said)
    if best["workers"] == 1 and any(r["workers"] > 1 for r in measured):
      line += " (more workers do not speed this program up on this machine)"
    if len(measured) > 1:
      runner = measured[1]
      behind = 1 - runner["rate"] / best["rate"]
      noise = max(best["spread"] or 0, runner["spread"] or 0) / 2
      line += (f"; {name(runner)} is within the measurement's spread ({100 * behind:.0f} % "
               f"slower): either will do" if behind <= noise else
               f"; the next, {name(runner)}, is {100 * behind:.0f} % slower")
    return line

  def projection(self, *, bandwidth_gbps=None, latency_us=0.0):
    """(the cost model fitted to the measured jobs, its rows projected to 8-256 workers);
    (None, why) when it cannot be fitted."""
    measured = [r for r in self.rows if r["rate"] and r["unit"] == "examples/s"]
    alone = next((r for r in measured if r["strategy"] == LIMIT and r["workers"] == 1), None)
    fitted = projection.fit(
        per_worker={(r["strategy"], r["workers"]): r["rate"] / r["workers"] for r in measured},
        batch=alone["examples_per_step"] if alone else None,
        model_bytes=max((r["trainable_bytes"] or 0 for r in measured), default=0),
        num_ps=self.num_ps, bandwidth_gbps=bandwidth_gbps)
    if fitted is None:
      return None, ("no projection: it needs one independent copy and a job of more than one "
                    "worker measured in examples/s and slower than its copies (else give "
                    "--project_bandwidth_gbps), and the model's size (its heartbeats')")
    return fitted, projection.project(fitted, latency_us * 1e-6)

  def write(self, output_dir, extra=None):
    """Writes results.json (with `extra`) and the chart to `output_dir`; lines that name
    them."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, RESULTS)
    with open(path, "w") as f:
      json.dump({"program": list(self.program), "cpu": cpu_model(),
                 "cpus": len(os.sched_getaffinity(0)),
                 "window": dataclasses.asdict(self.window), "rows": self.compared(),
                 "recommendation": self.recommendation(), **(extra or {})}, f, indent=1)
    return [f"results: {path}", self._chart(output_dir)]

  def _chart(self, output_dir):
    try:
      from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top
    except ImportError:
      return f"no {CHART}: matplotlib is not installed (pip install estimator_dist[charts])"
    by_strategy = {}
    for r in self.rows:
      if r["rate"]:
        by_strategy.setdefault(r["strategy"], []).append((r["workers"], r["rate"]))
    if not by_strategy:
      return f"no {CHART}: no job was measured"
    figure = Figure(figsize=(7, 4), layout="constrained")
    axes = figure.subplots()
    for strategy, points in by_strategy.items():
      axes.plot(*zip(*sorted(points)), marker="o",
                linestyle="--" if strategy == LIMIT else "-",
                label="limit: independent copies" if strategy == LIMIT else strategy)
    units = {r["unit"] for r in self.rows if r["rate"]}
    axes.set_xlabel("workers")
    axes.set_ylabel(" or ".join(sorted(units)) or "rate")
    axes.set_title(" ".join(self.program)[:80], fontsize=9)
    axes.legend()
    path = os.path.join(output_dir, CHART)
    figure.savefig(path, dpi=100)
    return f"chart: {path}"
