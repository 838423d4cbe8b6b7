"""A cost model fitted to the measured runs, projected to 8-256 workers (not measured).

  compute     t_c  = batch / (examples/sec of one independent worker)
  ring        t(N) = t_c + 2 (N-1)/N * S / B + 2 (N-1) * a
  ps (K)      t(N) = t_c + max(2 S / B_ps, 2 N S / (K B_ps))
  examples/sec = N * batch / t(N),  efficiency = t_c / t(N)

S is the bytes of the model's float32 variables. B is fitted from the measured ring
all-reduce job at the largest worker count n: the time it added per step over n
independent workers, t_x, moved 2 (n-1)/n S bytes, so B = 2 (n-1)/n S / t_x. B_ps is
fitted the same way from the parameter-server job (each step pushes S gradients and
pulls S variables). Communication is assumed not to overlap computation, each worker
to have its own machine, and ps links to be the bottleneck when N S / K exceeds S.
"""

import math

WORKERS = (8, 16, 32, 64, 128, 256)


def _step_time(row, batch):
  return batch / row["per_worker"]


def fit(rows, batch, model_bytes):
  """The model's parameters, fitted to the rows of one benchmark; None if it cannot be."""
  measured = {(r["kind"], r["strategy"], r["variant"], r["workers"]): r for r in rows
              if r["examples_per_sec"]}
  alone = measured.get(("independent", "local", "", 1))
  if not alone:
    return None
  params = {"batch": batch, "model_bytes": model_bytes, "t_compute": _step_time(alone, batch)}

  def bandwidth(strategy, bytes_moved):
    counts = [n for (k, s, v, n) in measured if k == "toolkit" and s == strategy and not v
              and n > 1 and ("independent", "local", "", n) in measured]
    if not counts:
      return None
    n = max(counts)
    extra = (_step_time(measured[("toolkit", strategy, "", n)], batch)
             - _step_time(measured[("independent", "local", "", n)], batch))
    return bytes_moved(n) / extra if extra > 0 else math.inf

  ring = (bandwidth("horovod", lambda n: 2 * (n - 1) / n * model_bytes)
          or bandwidth("multi_worker", lambda n: 2 * (n - 1) / n * model_bytes))
  ps = bandwidth("parameter_server", lambda n: 2 * model_bytes)
  if ring is None and ps is None:
    return None
  params["ring_bytes_per_sec"] = ring or ps
  params["ps_bytes_per_sec"] = ps or ring
  params["bandwidth_source"] = "fitted to this run's loopback"
  return params


SCHEMES = (("ring all-reduce", None), ("parameter servers, 1 ps", lambda n: 1),
           ("parameter servers, 1 ps per 4 workers", lambda n: math.ceil(n / 4)))


def project(params, latency_secs=0.0, workers=WORKERS):
  """Rows of projected examples/sec and efficiency for ring all-reduce and ps."""
  t_c, s, b = params["t_compute"], params["model_bytes"], params["batch"]
  ring_b, ps_b = params["ring_bytes_per_sec"], params["ps_bytes_per_sec"]
  rows = []
  for scheme, num_ps in SCHEMES:
    for n in workers:
      if num_ps is None:
        t = t_c + 2 * (n - 1) / n * s / ring_b + 2 * (n - 1) * latency_secs
      else:
        t = t_c + max(2 * s / ps_b, 2 * n * s / (num_ps(n) * ps_b))
      rows.append({"scheme": scheme, "workers": n, "examples_per_sec": n * b / t,
                   "efficiency": t_c / t})
  return rows


def markdown(params, rows):
  lines = [
      f"PROJECTION from a cost model, bandwidth {params.get('bandwidth_source', 'fitted')} "
      "(not measured): "
      f"t_c = {1000 * params['t_compute']:.1f} ms/step, S = {params['model_bytes'] / 1e6:.1f} MB, "
      f"B = {params['ring_bytes_per_sec'] / 1e9:.2f} GB/s (ring), "
      f"B_ps = {params['ps_bytes_per_sec'] / 1e9:.2f} GB/s", "",
      "| scheme | workers | examples/sec (projected) | efficiency (projected) |",
      "| --- | --- | --- | --- |"]
  lines += [f"| {r['scheme']} | {r['workers']} | {r['examples_per_sec']:.0f} | "
            f"{r['efficiency']:.2f} |" for r in rows]
  return "\n".join(lines)
