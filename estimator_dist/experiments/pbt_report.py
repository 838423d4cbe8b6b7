"""A PBT sweep's lineage: each member's segments, what it copied, and its chart.

`lineage` is the `pbt` entry of sweep.json: for each member, its segments in order (the
trial, the steps, the values, the metric at the end, and the member whose checkpoint it
took, if it did). `markdown` says the same in the report, and `draw` writes `pbt.png`: the
metric of every member against the global step (a dashed line where a member took another's
checkpoint) above each numeric value's schedule.
"""

import os

from estimator_dist.experiments import pbt
from estimator_dist.experiments import space as space_lib

CHART = "pbt.png"


def lineage(study, options):
  """{"members": [{"member": M, "segments": [...]}], "best": the best final segment's
  trial number (None while no member has finished the last generation)}."""
  found, members = pbt.segments(study), {}
  for member, generation in sorted(found):
    t = pbt.result(found, member, generation)
    if t is not None:
      members.setdefault(member, []).append({
          "trial": t.number, "generation": generation,
          "start_step": t.user_attrs.get("start_step", 0), "steps": t.user_attrs.get("steps"),
          "values": t.params, "value": t.value, "exploited": t.user_attrs.get("exploited")})
  rows = [{"member": m, "segments": members[m]} for m in sorted(members)]
  last = pbt.generations(study, options) - 1
  finals = [r["segments"][-1] for r in rows
            if r["segments"][-1]["generation"] == last and r["segments"][-1]["value"] is not None]
  sign = 1 if options.direction == "maximize" else -1
  best = max(finals, key=lambda s: sign * s["value"])["trial"] if finals else None
  return {"interval_steps": options.pbt_interval_steps, "members": rows, "best": best}


def markdown(data, metric):
  """The report's lines on the population."""
  lines = ["", f"Population ({len(data['members'])} members; each segment: steps, values, "
           f"eval {metric} at its end):"]
  for row in data["members"]:
    parts = []
    for s in row["segments"]:
      took = (f" from member {s['exploited']['member']}'s {s['exploited']['checkpoint']}"
              if s["exploited"] else "")
      value = "diverged" if s["value"] is None else f"{s['value']:.4f}"
      parts.append(f"{s['start_step']}-{s['steps']} {' '.join(space_lib.as_flags(s['values']))}"
                   f"{took} -> {value}")
    lines.append(f"- member {row['member']}: " + "; ".join(parts))
  return lines


def draw(data, *, options, pyplot):
  """Writes pbt.png into the sweep dir."""
  space = options.search_space
  numeric = [n for n in sorted(space) if not hasattr(space[n], "choices")]
  figure, axes = pyplot.subplots(1 + len(numeric), 1, sharex=True, squeeze=False,
                                 figsize=(9, 3.2 * (1 + len(numeric))))
  metric_axes, value_axes = axes[0][0], [a[0] for a in axes[1:]]
  ends = {s["trial"]: (s["steps"], s["value"]) for row in data["members"]
          for s in row["segments"] if s["value"] is not None and s["steps"] is not None}
  for row in data["members"]:
    color, previous = f"C{row['member'] % 10}", None
    metric_axes.plot([], [], color=color, label=f"member {row['member']}")
    for s in row["segments"]:
      start = ends.get(s["exploited"]["trial"]) if s["exploited"] else previous
      previous = end = ends.get(s["trial"])
      if end:
        metric_axes.plot([start[0], end[0]] if start else [end[0]],
                         [start[1], end[1]] if start else [end[1]], color=color,
                         linestyle="--" if s["exploited"] else "-", marker="o", markersize=3)
      for axis, name in zip(value_axes, numeric):
        axis.plot([s["start_step"], s["steps"] or s["start_step"]], [s["values"][name]] * 2,
                  color=color)
  metric_axes.set_ylabel(f"eval {options.metric}")
  metric_axes.legend(fontsize="small")
  metric_axes.set_title("Population-based training (dashed: took another member's "
                        "checkpoint)")
  for axis, name in zip(value_axes, numeric):
    axis.set_ylabel(name)
    if space[name].log:
      axis.set_yscale("log")
  axes[-1][0].set_xlabel("global step")
  figure.savefig(os.path.join(options.sweep_dir, CHART), dpi=100, bbox_inches="tight")
  pyplot.close(figure)
