"""The shares of this machine's CPUs (and GPUs) that a sweep's parallel trials run on."""

import os
import shutil
import subprocess

from estimator_dist import errors


def cpu_shares(parallel):
  """Disjoint CPU sets, one for each parallel trial."""
  cpus = sorted(os.sched_getaffinity(0))
  if parallel > len(cpus):
    raise errors.ConfigError(
        f"--parallel={parallel} is more than the {len(cpus)} CPUs this machine gives us; "
        f"parallel trials get disjoint CPUs, so use --parallel={len(cpus)} or fewer.")
  per_trial = len(cpus) // parallel
  return [set(cpus[i * per_trial:(i + 1) * per_trial]) for i in range(parallel)]


def visible_gpus(environ=os.environ):
  """The GPU indices trials may use: CUDA_VISIBLE_DEVICES where set, else nvidia-smi's."""
  if "CUDA_VISIBLE_DEVICES" in environ:
    listed = environ["CUDA_VISIBLE_DEVICES"].split(",")
    return [g.strip() for g in listed if g.strip() not in ("", "-1")]
  if not shutil.which("nvidia-smi"):
    return []
  try:
    listed = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                            capture_output=True, text=True, check=False, timeout=30)
  except subprocess.TimeoutExpired:
    return []
  return listed.stdout.split() if listed.returncode == 0 else []


def gpu_shares(parallel, gpus):
  """Disjoint GPU lists, one for each parallel trial; empty lists where there are no GPUs."""
  if not gpus:
    return [[] for _ in range(parallel)]
  if parallel > len(gpus):
    raise errors.ConfigError(
        f"--parallel={parallel} is more than the {len(gpus)} GPUs here ({','.join(gpus)}); "
        f"parallel trials get disjoint GPUs, so use --parallel={len(gpus)} or fewer (or hide "
        "the GPUs with CUDA_VISIBLE_DEVICES= to train on CPUs).")
  per_trial = len(gpus) // parallel
  return [gpus[i * per_trial:(i + 1) * per_trial] for i in range(parallel)]
