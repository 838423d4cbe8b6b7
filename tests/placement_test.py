"""Placement: each training process of a shared host gets its own share of the CPUs and
GPUs."""

import json
import os

import pytest

from estimator_dist import errors
from estimator_dist.contract import cluster
from estimator_dist.task import placement
from tests import helpers


@pytest.mark.parametrize("cpus,rank,size,expected", [
    ({0, 1}, 0, 2, [0]), ({0, 1}, 1, 2, [1]), ({0, 1, 2, 3}, 1, 2, [2, 3]),
    ({4, 5, 6}, 1, 2, [5]), ({0, 1}, 0, 3, None), ({0, 1}, 0, 1, None), ({0, 1}, -1, 2, None)])
def test_share(cpus, rank, size, expected):
  assert placement.share(cpus, rank, size) == expected


def test_each_training_process_of_a_host_gets_its_own_gpus_and_a_ps_none():
  # chief and worker 0 share host a; worker 1 and the ps are alone on b and c.
  tasks = {f"{role}:{i}": cluster.task_in(
      {"chief": ["a:1"], "worker": ["a:2", "b:1"], "ps": ["c:1"], "evaluator": ["a:3"]},
      role, i, source="TF_CONFIG")
           for role, i in (("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0),
                           ("evaluator", 0))}
  assert {name: placement.gpu_share(task, 4) for name, task in tasks.items()} == {
      "chief:0": [0, 1], "worker:0": [2, 3], "worker:1": None, "ps:0": [],
      "evaluator:0": None}
  # Fewer GPUs than processes: not split, each sees them all.
  assert placement.gpu_share(tasks["worker:0"], 1) is None
  assert placement.apply_gpus(tasks["chief:0"]) is None  # No GPU on this machine.


def test_bad_choice_names_the_options():
  with pytest.raises(errors.ConfigError, match="cpu_affinity .*'sometimes'.* auto, none"):
    placement.apply("sometimes", cluster.LOCAL_TASK)


PIN = """
import json, os, sys
from estimator_dist.contract import cluster
from estimator_dist.task import placement
task = cluster.parse_tf_config(sys.argv[1])
def cpus_of(status):  # "Cpus_allowed_list:\t0-1,3" -> [0, 1, 3]
  line = next(l for l in status.splitlines() if l.startswith("Cpus_allowed_list:"))
  ranges = [r.split("-") for r in line.split()[1].split(",")]
  return [c for r in ranges for c in range(int(r[0]), int(r[-1]) + 1)]
cpus = placement.apply(sys.argv[2], task)
threads = [open(f"/proc/self/task/{t}/status").read() for t in os.listdir("/proc/self/task")]
print(json.dumps([cpus, [cpus_of(t) for t in threads]]))
"""
# A local job's sandbox: its own PID namespace, where /proc is still the host's.
_OWN_PID_NAMESPACE = ["unshare", *([] if os.geteuid() == 0 else ["--user", "--map-root-user"]),
                      "--pid", "--fork"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("role,index,affinity,pinned,prefix", [
    ("worker", 0, "auto", True, []), ("chief", 0, "auto", True, []),
    ("worker", 0, "none", False, []), ("ps", 0, "auto", False, []),
    ("worker", 0, "auto", True, _OWN_PID_NAMESPACE)], ids=[
        "worker", "chief", "none", "ps", "worker-in-its-own-pid-namespace"])
@pytest.mark.processes
def test_apply_pins_every_thread_of_a_shared_host(role, index, affinity, pinned, prefix):
  spec = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}
  config = cluster.tf_config(spec, role, index)
  code, output = helpers.run([*prefix, helpers.PYTHON, "-c", PIN, config, affinity])
  assert code == 0, output
  cpus, threads = json.loads(output.strip().splitlines()[-1])
  everything = sorted(os.sched_getaffinity(0))
  expected = placement.share(everything, 0 if role == "chief" else 1, 2) if pinned else None
  assert cpus == expected
  assert threads == [expected or everything] * len(threads)
