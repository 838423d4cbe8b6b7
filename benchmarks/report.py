"""The benchmark's results: rows, a markdown table, results.json and results.png."""

import json
import os


def rate_text(result):
  t = result["throughput"]
  return f"{t['examples_per_sec']:.0f} examples/sec ±{100 * t['spread']:.0f}%" if t else (
      "no measurement")


def rows(results):
  """One row per job, with efficiency against the independent job of the same size and,
  for the toolkit, the ratio to its hand-written baseline."""
  by_key = {(r["job"].kind, r["job"].strategy, r["job"].variant, r["job"].num_workers): r
            for r in results}

  def rate(kind, strategy, n, variant=""):
    r = by_key.get((kind, strategy, variant, n))
    return r["throughput"]["examples_per_sec"] if r and r["throughput"] else None

  table = []
  for r in results:
    job, t = r["job"], r["throughput"]
    row = {"kind": job.kind, "strategy": job.strategy, "variant": job.variant,
           "workers": job.num_workers, "exit_code": r["code"], "seconds": round(r["seconds"], 1),
           "examples_per_sec": None, "per_worker": None, "spread": None,
           "efficiency": None, "overhead": None}
    if t:
      row.update(examples_per_sec=t["examples_per_sec"],
                 per_worker=t["examples_per_sec"] / job.num_workers, spread=t["spread"])
      ceiling = rate("independent", "local", job.num_workers)
      if ceiling:
        row["efficiency"] = t["examples_per_sec"] / ceiling
      baseline = rate("baseline", job.strategy, job.num_workers)
      if job.kind == "toolkit" and baseline:
        row["overhead"] = t["examples_per_sec"] / baseline
    table.append(row)
  return table


def _label(row):
  names = {"independent": "independent workers (ceiling)",
           "baseline": f"{row['strategy']}, hand-written"}
  label = names.get(row["kind"], row["strategy"])
  return f"{label} ({row['variant']})" if row["variant"] else label


def _fmt(value, spec):
  return "–" if value is None else format(value, spec)


def markdown(table, settings, target_accuracy=None):
  head = ["strategy", "workers", "examples/sec", "per worker", "spread", "efficiency",
          "toolkit / hand-written"]
  if target_accuracy:
    head.append(f"seconds to {target_accuracy:g} accuracy")
  lines = [f"model {settings.model}, {settings.data} data, batch {settings.batch_size} per "
           f"worker, {settings.steps} steps, {settings.threads_per_worker or 'default'} "
           f"intra-op thread(s) per worker", "",
           "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
  for row in table:
    cells = [_label(row), str(row["workers"]), _fmt(row["examples_per_sec"], ".0f"),
             _fmt(row["per_worker"], ".0f"),
             "–" if row["spread"] is None else f"±{100 * row['spread']:.0f}%",
             _fmt(row["efficiency"], ".2f"), _fmt(row["overhead"], ".2f")]
    if target_accuracy:
      cells.append(_fmt(row.get("time_to_accuracy"), ".1f"))
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def write(table, settings, output_dir, extra=None):
  os.makedirs(output_dir, exist_ok=True)
  with open(os.path.join(output_dir, "results.json"), "w") as f:
    json.dump({"settings": vars(settings), "rows": table, **(extra or {})}, f, indent=1)
  chart(table, settings, os.path.join(output_dir, "results.png"))
  if extra and extra.get("projection"):
    projection_chart(extra["projection"]["rows"], os.path.join(output_dir, "projection.png"))


def _pyplot():
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


def chart(table, settings, path):
  """examples/sec and efficiency per strategy and worker count."""
  plt = _pyplot()

  shown = [r for r in table if r["kind"] != "baseline" and r["examples_per_sec"]]
  labels = sorted({_label(r) for r in shown}, key=[_label(r) for r in shown].index)
  counts = sorted({r["workers"] for r in shown})
  fig, (ax_rate, ax_eff) = plt.subplots(1, 2, figsize=(12, 4.5))
  width = 0.8 / max(len(labels), 1)
  for i, label in enumerate(labels):
    rates = {r["workers"]: r for r in shown if _label(r) == label}
    xs = [c + (i - len(labels) / 2 + 0.5) * width for c in range(len(counts))]
    ax_rate.bar(xs, [rates[n]["examples_per_sec"] if n in rates else 0 for n in counts],
                width, label=label)
    ax_eff.bar(xs, [(rates[n]["efficiency"] or 0) if n in rates else 0 for n in counts],
               width, label=label)
  for ax, title in ((ax_rate, "examples/sec"), (ax_eff, "efficiency vs independent workers")):
    ax.set_xticks(range(len(counts)), [f"{n} worker(s)" for n in counts])
    ax.set_title(title)
  ax_eff.axhline(0.85, color="gray", linestyle="--", linewidth=1)
  fig.legend(*ax_rate.get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=8)
  fig.suptitle(f"{settings.model}, batch {settings.batch_size}/worker, "
               f"{settings.threads_per_worker or 'default'} thread(s)/worker")
  fig.tight_layout(rect=(0, 0.12, 1, 1))
  fig.savefig(path, dpi=100)
  plt.close(fig)


def projection_chart(projected, path):
  """Projected efficiency against worker count, one line per scheme."""
  plt = _pyplot()
  fig, ax = plt.subplots(figsize=(7, 4.5))
  for scheme in dict.fromkeys(r["scheme"] for r in projected):
    points = [(r["workers"], r["efficiency"]) for r in projected if r["scheme"] == scheme]
    ax.plot(*zip(*points), marker="o", label=scheme)
  ax.set_xscale("log", base=2)
  ax.set_xlabel("workers")
  ax.set_ylabel("efficiency")
  ax.set_ylim(0, 1.05)
  ax.set_title("PROJECTION (cost model, not measured)")
  ax.legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def add_time_to_accuracy(table, results, settings, target):
  """Adds `time_to_accuracy` (seconds from the job's start) to each toolkit row."""
  from benchmarks import accuracy  # pylint: disable=g-import-not-at-top  (imports TensorFlow)
  for row, result in zip(table, results):
    if row["kind"] == "toolkit" and result["code"] == 0:
      reached = accuracy.time_to_accuracy(settings.model, result["model_dir"], result["start"],
                                          target)
      row["time_to_accuracy"] = reached[0] if reached else None
      row["step_at_accuracy"] = reached[1] if reached else None
