"""CPU placement: each training process of a shared host gets its own share of the CPUs."""

import json
import os

import pytest

from estimator_dist.task import cluster
from estimator_dist import errors
from estimator_dist.task import placement
from tests import helpers


@pytest.mark.parametrize("cpus,rank,size,expected", [
    ({0, 1}, 0, 2, [0]), ({0, 1}, 1, 2, [1]), ({0, 1, 2, 3}, 1, 2, [2, 3]),
    ({4, 5, 6}, 1, 2, [5]), ({0, 1}, 0, 3, None), ({0, 1}, 0, 1, None), ({0, 1}, -1, 2, None)])
def test_share(cpus, rank, size, expected):
  assert placement.share(cpus, rank, size) == expected


def test_bad_choice_names_the_options():
  with pytest.raises(errors.ConfigError, match="cpu_affinity .*'sometimes'.* auto, none"):
    placement.apply("sometimes", cluster.LOCAL_TASK)


PIN = """
import json, os, sys
from estimator_dist.task import cluster, placement
task = cluster.parse_tf_config(sys.argv[1])
print(json.dumps([placement.apply(sys.argv[2], task),
                  [sorted(os.sched_getaffinity(int(t)))
                   for t in os.listdir("/proc/self/task")]]))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("role,index,affinity,pinned", [
    ("worker", 0, "auto", True), ("chief", 0, "auto", True), ("worker", 0, "none", False),
    ("ps", 0, "auto", False)])
@pytest.mark.processes
def test_apply_pins_every_thread_of_a_shared_host(role, index, affinity, pinned):
  spec = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}
  config = cluster.tf_config(spec, role, index)
  code, output = helpers.run([helpers.PYTHON, "-c", PIN, config, affinity])
  assert code == 0, output
  cpus, threads = json.loads(output.strip().splitlines()[-1])
  everything = sorted(os.sched_getaffinity(0))
  expected = placement.share(everything, 0 if role == "chief" else 1, 2) if pinned else None
  assert cpus == expected
  assert threads == [expected or everything] * len(threads)
