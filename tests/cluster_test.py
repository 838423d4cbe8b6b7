"""TF_CONFIG parsing and validation: every bad field gets one message with the fix."""

import dataclasses
import json

import pytest

from estimator_dist.contract import cluster
from estimator_dist.contract import environment
from estimator_dist.strategies import factory


def tf_config(cluster_spec, role="worker", index=0):
  return cluster.tf_config(cluster_spec, role, index)


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


EXAMPLE = ('{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"]}, '
           '"task": {"type": "worker", "index": 0}}')


@pytest.mark.parametrize("text,message", [
    ('{"cluster": ',
     "TF_CONFIG is not valid JSON (Expecting value at character 12): '{\"cluster\": '. "
     f"Set it to a JSON object such as {EXAMPLE}"),
    ("[1, 2]", f"TF_CONFIG is [1, 2]: it must be a JSON object such as {EXAMPLE}"),
    (tf_config({"chief": ["h:1"], "trainer": ["h:2"]}),
     "TF_CONFIG \"cluster\" task type is 'trainer': use only chief, worker, ps, evaluator "
     "(and the legacy 'master' for chief)."),
    (tf_config({"chief": ["h:1"], "worker": ["h:1"]}),
     "TF_CONFIG \"cluster\".\"worker\"[0] is 'h:1': the same address is already chief[0]; "
     "every task needs its own host:port."),
    (tf_config({"chief": ["h:1"], "worker": ["h-2"]}),
     "TF_CONFIG \"cluster\".\"worker\"[0] is 'h-2': each address must be a \"host:port\" "
     "string, for example \"10.0.0.5:2222\"."),
    (tf_config({"chief": ["h:1"], "worker": []}),
     "TF_CONFIG \"cluster\".\"worker\" is []: it must be a non-empty list of \"host:port\" "
     "addresses."),
    (tf_config({"chief": ["h:1"], "master": ["h:2"]}, "chief"),
     "TF_CONFIG \"cluster\" is ['chief', 'master']: give either 'chief' or 'master', not both."),
    (tf_config({"chief": ["h:1", "h:2"]}, "chief"),
     "TF_CONFIG \"cluster\".\"chief\" is ['h:1', 'h:2']: a cluster has at most one chief; "
     "list the others under 'worker'."),
    (tf_config({"chief": ["h:1"], "evaluator": ["h:2", "h:3"]}, "chief"),
     "TF_CONFIG \"cluster\".\"evaluator\" is ['h:2', 'h:3']: a cluster has at most one "
     "evaluator; list the others under 'worker'."),
    (tf_config({"chief": ["h:1"]}, "evaluator", 1),
     "TF_CONFIG \"task\".\"index\" is 1: a job has one evaluator and its index is 0."),
    (tf_config({"ps": ["h:1"]}, "ps"),
     "TF_CONFIG \"cluster\" is {'ps': ['h:1']}: it needs a 'chief' or at least one 'worker' "
     "task to train."),
    (tf_config({"chief": ["h:1"], "worker": ["h:2"]}, "ps"),
     "TF_CONFIG \"task\".\"type\" is 'ps': it must be one of the cluster's task types "
     "['chief', 'worker']."),
    (tf_config({"chief": ["h:1"], "worker": ["h:2"]}, "worker", 1),
     "TF_CONFIG \"task\".\"index\" is 1: the cluster has 1 'worker' task(s), so use 0..0."),
    (tf_config({"chief": ["h:1"], "worker": ["h:2"]}, "worker", "0"),
     "TF_CONFIG \"task\".\"index\" is '0': it must be an integer, the task's position in "
     "its list."),
    (json.dumps({"cluster": {"worker": ["h:1"]}}),
     "TF_CONFIG \"task\" is None: it must name this process, e.g. {\"type\": \"worker\", "
     "\"index\": 0}."),
])
def test_bad_tf_config_names_field_value_and_fix(text, message):
  with pytest.raises(cluster.ClusterConfigError) as e:
    cluster.parse_tf_config(text)
  assert str(e.value) == message


# What strategies refuse in a well-formed cluster; each message is the whole error.
@pytest.mark.parametrize("strategy,spec,role,message", [
    ("multi_worker", {"worker": ["h:1", "h:2"]}, "worker",
     "TF_CONFIG's cluster has no 'chief' task (it has ['worker']), and strategy "
     "'multi_worker' trains through Estimator, which needs one. Make the first worker the "
     "chief and number the other workers from 0: \"cluster\": {\"chief\": [\"h:1\"], "
     "\"worker\": [\"h:2\"]}."),
    ("parameter_server", {"worker": ["h:1"], "ps": ["h:2"]}, "worker",
     "TF_CONFIG's cluster has no 'chief' task (it has ['ps', 'worker']), and strategy "
     "'parameter_server' trains through Estimator, which needs one. Make the first worker "
     "the chief and number the other workers from 0: \"cluster\": {\"chief\": [\"h:1\"], "
     "\"ps\": [\"h:2\"]}."),
    ("multi_worker", {"chief": ["h:1"], "worker": ["h:2"], "ps": ["h:3"]}, "chief",
     "TF_CONFIG's cluster has 'ps' tasks, which strategy 'multi_worker' does not use (it "
     "takes chief, worker, evaluator). Remove them from TF_CONFIG or pick a strategy that "
     "uses them."),
    ("parameter_server", {"chief": ["h:1"], "worker": ["h:2"]}, "chief",
     "strategy 'parameter_server' needs at least one 'ps' task, but TF_CONFIG's cluster has "
     "['chief', 'worker']. Add \"ps\": [\"host:port\"] to the cluster (launcher: --num_ps=1)."),
    ("mirrored", {"chief": ["h:1"], "worker": ["h:2"]}, "chief",
     "strategy 'mirrored' does not use TF_CONFIG, but TF_CONFIG describes a cluster "
     "['chief', 'worker'], which Estimator would wait for. Unset TF_CONFIG (the launcher "
     "does), or pick multi_worker or parameter_server to train on that cluster."),
])
def test_strategy_refuses_a_cluster_it_cannot_use(strategy, spec, role, message):
  adapter_class = factory.adapter_class(strategy)
  with pytest.raises(cluster.ClusterConfigError) as e:
    adapter_class(task=cluster.parse_tf_config(tf_config(spec, role)))
  assert str(e.value) == message


def test_ranks_of_horovodrun_are_refused_by_tf_config_strategies():
  task = environment.task_from_environment({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"})
  with pytest.raises(cluster.ClusterConfigError) as e:
    factory.adapter_class("multi_worker")(task=task)
  assert str(e.value) == (
      "this process is rank 1 of 2 started by horovodrun or mpirun, but strategy "
      "'multi_worker' takes its cluster from TF_CONFIG. Use --strategy=horovod under "
      "horovodrun, or start multi_worker with `estimator-dist launch "
      "--strategy=multi_worker`.")
  with pytest.raises(cluster.ClusterConfigError, match="every rank would train the same model"):
    factory.adapter_class("mirrored")(task=task)


@pytest.mark.parametrize("env,expected", [
    ({"HOROVOD_RANK": "1", "HOROVOD_SIZE": "4", "HOROVOD_LOCAL_RANK": "1",
      "HOROVOD_LOCAL_SIZE": "2"}, ("worker", 1, 4, 1, 2)),
    ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
      "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
     ("chief", 0, 2, 0, 2)),
])
def test_horovod_environment(env, expected):
  task = environment.task_from_environment(env)
  assert (task.role, task.rank, task.size, task.local_rank, task.local_size) == expected
  assert task.source == "horovod"


def test_tf_config_comes_before_every_other_source():
  env = {"TF_CONFIG": tf_config({"chief": ["h:1"], "worker": ["h:2"]}, "worker"),
         "HOROVOD_RANK": "0", "HOROVOD_SIZE": "2", "SLURM_PROCID": "0",
         "SLURM_STEP_NUM_TASKS": "2"}
  assert environment.task_from_environment(env).source == "TF_CONFIG"
  assert environment.task_from_environment({}) == cluster.LOCAL_TASK


def test_task_info_cannot_be_changed():
  task = cluster.parse_tf_config(tf_config(FULL, "chief"))
  with pytest.raises(TypeError):
    task.cluster["worker"] = ("x:1",)
  with pytest.raises(dataclasses.FrozenInstanceError):
    task.rank = 3


@pytest.mark.parametrize("num_ps,evaluator,expected", [
    (0, False, {"chief": ["a:1"], "worker": ["a:2", "b:1", "b:2"]}),
    (1, True, {"chief": ["a:1"], "evaluator": ["a:2"], "ps": ["b:1"], "worker": ["b:2"]}),
])
def test_roles_follow_slurm_cluster_resolver_order(num_ps, evaluator, expected):
  spec, roles = cluster.assign_roles(["a:1", "a:2", "b:1", "b:2"], num_ps, evaluator)
  assert {r: list(a) for r, a in spec.items()} == expected
  assert [spec[r][i] for r, i in roles] == ["a:1", "a:2", "b:1", "b:2"]


def test_too_few_tasks_for_the_roles():
  with pytest.raises(cluster.ClusterConfigError) as e:
    cluster.assign_roles(["a:1", "a:2"], num_ps=2, source="Spark")
  assert str(e.value) == ("Spark started 2 task(s), fewer than the 3 that the chief and 2 ps "
                          "need. Start at least 3.")


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
