"""A cost model fitted to measured jobs, projected to 8-256 workers (not measured): the
benchmarks' (`benchmarks/comparison.py`) and `estimator-dist bench --project`'s.

  compute     t_c  = batch / (examples/sec of one independent worker)
  ring        t(N) = t_c + 2 (N-1)/N * S / B + 2 (N-1) * a
  ps (K)      t(N) = t_c + max(2 S / B_ps, 2 N S / (K B_ps))
  examples/sec = N * batch / t(N),  efficiency = t_c / t(N)

S is the bytes of the model's trainable variables. B is fitted from the measured ring
all-reduce job at the largest worker count n: the time it added per step over n
independent workers, t_x, moved 2 (n-1)/n S bytes, so B = 2 (n-1)/n S / t_x. B_ps is
fitted the same way from the parameter-server job (each step pushes S gradients and
pulls S variables, over its K ps: the busiest link carries max(2 S, 2 n S / K)).
Communication is assumed not to overlap computation, each worker
to have its own machine, and ps links to be the bottleneck when N S / K exceeds S.
"""

import math

WORKERS = (8, 16, 32, 64, 128, 256)


INDEPENDENT = "independent"


def fit(*, per_worker, batch, model_bytes, num_ps=1, bandwidth_gbps=None):
  """The model's parameters fitted to `per_worker` ({(job, workers): examples/sec per
  worker}, job "independent" for the independent copies, else a strategy's name), the batch
  of one worker, `model_bytes` and the `num_ps` of the parameter_server jobs; with
  `bandwidth_gbps`, the links have that bandwidth instead. None if it cannot be fitted (no
  job slower than its independent copies: its communication was not measured)."""
  alone = per_worker.get((INDEPENDENT, 1))
  if not alone or not batch or not model_bytes:
    return None
  params = {"batch": batch, "model_bytes": model_bytes, "t_compute": batch / alone}
  if bandwidth_gbps:
    return {**params, "ring_bytes_per_sec": bandwidth_gbps / 8e-9,
            "ps_bytes_per_sec": bandwidth_gbps / 8e-9,
            "bandwidth_source": f"given as {bandwidth_gbps:g} Gbit/s"}

  def bandwidth(strategy, bytes_moved):
    counts = [n for (s, n) in per_worker if s == strategy and n > 1
              and (INDEPENDENT, n) in per_worker]
    if not counts:
      return None
    n = max(counts)
    extra = batch / per_worker[(strategy, n)] - batch / per_worker[(INDEPENDENT, n)]
    return bytes_moved(n) / extra if extra > 0 else None

  ring = (bandwidth("horovod", lambda n: 2 * (n - 1) / n * model_bytes)
          or bandwidth("multi_worker", lambda n: 2 * (n - 1) / n * model_bytes))
  # What the busiest link of the measured job carried, as `project` counts it.
  ps = bandwidth("parameter_server",
                 lambda n: max(2 * model_bytes, 2 * n * model_bytes / num_ps))
  if ring is None and ps is None:
    return None
  params["ring_bytes_per_sec"] = ring or ps
  params["ps_bytes_per_sec"] = ps or ring
  params["bandwidth_source"] = "fitted to this machine's loopback"
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
      f"t_c = {1000 * params['t_compute']:.3g} ms/step, S = {params['model_bytes'] / 1e6:.3g} MB, "
      f"B = {params['ring_bytes_per_sec'] / 1e9:.3g} GB/s (ring), "
      f"B_ps = {params['ps_bytes_per_sec'] / 1e9:.3g} GB/s", "",
      "| scheme | workers | examples/sec (projected) | efficiency (projected) |",
      "| --- | --- | --- | --- |"]
  lines += [f"| {r['scheme']} | {r['workers']} | {r['examples_per_sec']:.0f} | "
            f"{r['efficiency']:.2f} |" for r in rows]
  return "\n".join(lines)
