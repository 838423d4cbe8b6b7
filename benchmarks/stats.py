"""Throughput from step times: windows after warm-up, within the span all tasks ran."""

import statistics


def _windows(times, examples_per_step, warmup_steps, window_steps, start, end):
  """examples/sec of each window of `window_steps` runs inside [start, end]."""
  times = times[warmup_steps:]
  rates = []
  for i in range(0, len(times) - window_steps, window_steps):
    t0, t1 = times[i], times[i + window_steps]
    if t0 >= start and t1 <= end and t1 > t0:
      rates.append(window_steps * examples_per_step / (t1 - t0))
  return rates


def throughput(timings, warmup_steps, window_steps):
  """Median examples/sec of a job, total and per task, and the spread of its windows.

  Only windows in the span where every task was past its warm-up and still running
  count, so tasks that finish early do not speed up the others unseen. The total is
  the sum of each task's median; `spread` is half the interquartile range of the
  per-window totals, relative to their median.
  """
  measured = [t for t in timings if len(t["times"]) > warmup_steps + window_steps]
  if not measured or len(measured) < len(timings):
    return None
  start = max(t["times"][warmup_steps] for t in measured)
  end = min(t["times"][-1] for t in measured)
  rates = [_windows(t["times"], t["examples_per_step"], warmup_steps, window_steps, start, end)
           for t in measured]
  if not all(rates):
    return None
  total = sum(statistics.median(r) for r in rates)
  totals = [sum(r[i] for r in rates) for i in range(min(map(len, rates)))]
  spread = 0.0
  if len(totals) >= 2:
    q1, _, q3 = statistics.quantiles(totals, n=4)
    spread = (q3 - q1) / 2 / statistics.median(totals)
  return {"examples_per_sec": total,
          "spread": spread, "windows": min(map(len, rates)), "tasks": len(measured)}
