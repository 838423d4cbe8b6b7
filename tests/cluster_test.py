"""TF_CONFIG parsing and validation: every bad field gets one message with the fix."""

import json

import pytest

from estimator_dist import cluster


def tf_config(cluster_spec, role="worker", index=0):
  return json.dumps({"cluster": cluster_spec, "task": {"type": role, "index": index}})


FULL = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"], "evaluator": ["h:5"]}


@pytest.mark.parametrize("role,index,rank,chief", [
    ("chief", 0, 0, True), ("worker", 0, 1, False), ("worker", 1, 2, False),
    ("ps", 0, -1, False), ("evaluator", 0, -1, False)])
def test_ranks_count_chief_first(role, index, rank, chief):
  task = cluster.parse_tf_config(tf_config(FULL, role, index))
  assert (task.role, task.index, task.rank, task.size) == (role, index, rank, 3)
  assert task.is_chief is chief
  assert task.num_tasks("worker") == 2


def test_worker_zero_leads_without_a_chief():
  task = cluster.parse_tf_config(tf_config({"worker": ["h:1", "h:2"]}, "worker", 0))
  assert task.is_chief and task.size == 2


def test_master_is_the_chief():
  task = cluster.parse_tf_config(tf_config({"master": ["h:1"], "worker": ["h:2"]}, "master"))
  assert task.role == "chief" and task.is_chief


@pytest.mark.parametrize("text", [None, "", "  ", "{}", '{"cluster": {}}'])
def test_no_cluster_is_one_local_process(text):
  assert cluster.parse_tf_config(text) == cluster.LOCAL_TASK


@pytest.mark.parametrize("text,message", [
    ('{"cluster": ', "TF_CONFIG is not valid JSON (Expecting value at character 12)"),
    ("[1, 2]", "TF_CONFIG  is [1, 2]: it must be a JSON object"),
    (tf_config({"chief": ["h:1"], "trainer": ["h:2"]}),
     "TF_CONFIG \"cluster\" task type is 'trainer': use only chief, worker, ps, evaluator"),
    (tf_config({"chief": ["h:1"], "worker": ["h:1"]}),
     "TF_CONFIG \"cluster\".\"worker\"[0] is 'h:1': the same address is already chief[0]"),
    (tf_config({"chief": ["h:1"], "worker": ["h-2"]}),
     "TF_CONFIG \"cluster\".\"worker\"[0] is 'h-2': each address must be a \"host:port\""),
    (tf_config({"chief": ["h:1"], "worker": []}),
     "TF_CONFIG \"cluster\".\"worker\" is []: it must be a non-empty list"),
    (tf_config({"chief": ["h:1", "h:2"]}, "chief"),
     "TF_CONFIG \"cluster\".\"chief\" is ['h:1', 'h:2']: a cluster has at most one chief"),
    (tf_config({"chief": ["h:1"], "evaluator": ["h:2", "h:3"]}, "chief"),
     "a cluster has at most one evaluator"),
    (tf_config({"ps": ["h:1"]}, "ps"), "it needs a 'chief' or at least one 'worker'"),
    (tf_config({"chief": ["h:1"], "worker": ["h:2"]}, "ps"),
     "TF_CONFIG \"task\".\"type\" is 'ps': it must be one of the cluster's task types"),
    (tf_config({"chief": ["h:1"], "worker": ["h:2"]}, "worker", 1),
     "TF_CONFIG \"task\".\"index\" is 1: the cluster has 1 'worker' task(s), so use 0..0."),
    (json.dumps({"cluster": {"worker": ["h:1"]}}), "TF_CONFIG \"task\" is None: it must name"),
])
def test_bad_tf_config_names_field_value_and_fix(text, message):
  with pytest.raises(cluster.ClusterConfigError) as e:
    cluster.parse_tf_config(text)
  assert message in str(e.value)


def test_tf_config_round_trip():
  spec = {"chief": ("h:1",), "worker": ("h:2",)}
  task = cluster.parse_tf_config(cluster.tf_config(spec, "worker", 0))
  assert (task.role, task.rank, dict(task.cluster)) == ("worker", 1, spec)


@pytest.mark.parametrize("role,index,local", [
    ("chief", 0, (0, 2)), ("worker", 0, (1, 2)), ("worker", 1, (0, 2)), ("worker", 2, (1, 2)),
    ("ps", 0, (-1, 2))])
def test_local_place_counts_training_tasks_on_the_same_host(role, index, local):
  spec = {"chief": ["a:1"], "worker": ["a:2", "b:1", "b:2"], "ps": ["a:3"]}
  task = cluster.parse_tf_config(tf_config(spec, role, index))
  assert (task.local_rank, task.local_size) == local
