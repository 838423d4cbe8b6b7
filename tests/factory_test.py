"""The factory and each adapter's refusal of a cluster it cannot use."""

import os

import pytest

import estimator_dist as ed
from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.contract import environment
from estimator_dist.strategies import factory
from estimator_dist.strategies import traits

CHIEF_WORKER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}


@pytest.fixture
def tf_config(monkeypatch):
  def set_cluster(cluster, role="chief"):
    monkeypatch.setenv("TF_CONFIG", cluster_lib.tf_config(cluster, role, 0))
  monkeypatch.delenv("TF_CONFIG", raising=False)
  # The adapter an earlier test of this process started would be returned, not made anew.
  monkeypatch.setattr(factory, "_started", None)
  return set_cluster


def test_names():
  assert ed.STRATEGIES == ("local", "mirrored", "multi_worker", "parameter_server", "horovod")
  assert factory.adapter_class("collective_all_reduce") is factory.adapter_class("multi_worker")


@pytest.mark.parametrize("name", ed.STRATEGIES)
def test_each_adapter_reads_its_facts_from_the_one_table(name):
  cls = factory.adapter_class(name)
  task = ed.TaskInfo("chief", 0, 0, 1)
  if traits.TABLE[name].uses_tf_config:
    task = cluster_lib.task_in({"chief": ("h:1",), "ps": ("h:2",)} if traits.TABLE[name].needs_ps
                           else {"chief": ("h:1",)}, "chief", 0, source="TF_CONFIG")
  assert cls.name == name and cls(task=task).traits is traits.TABLE[name]


@pytest.mark.parametrize("name", traits.NAMES)
def test_each_strategys_options_are_found_without_its_adapter(name):
  """The training flags are made from them where TensorFlow is not installed."""
  assert factory.options_class(name) is factory.adapter_class(name).Options
  assert factory.options_for(name) == factory.options_class(name)()


def test_construction_has_no_side_effects(tf_config, monkeypatch):
  """Validating a task starts nothing and publishes nothing; start() does both."""
  tf_config(dict(CHIEF_WORKER, ps=["127.0.0.1:3"]))
  text = os.environ["TF_CONFIG"]
  task = environment.task_from_environment()
  adapter = factory.adapter_class("parameter_server")(task=task)
  assert not adapter.started and adapter.cpus is None and os.environ["TF_CONFIG"] == text
  assert adapter.distribute_strategy() is None


def test_local_adapter(tf_config):
  adapter = ed.create_strategy("local")
  assert (adapter.task.rank, adapter.task.size, adapter.task.is_chief) == (0, 1, True)
  assert adapter.num_replicas == 1 and adapter.distribute_strategy() is None


def test_horovod_adapter_knows_its_rank(tf_config):
  adapter = ed.create_strategy("horovod", compression="fp16")
  assert (adapter.task.rank, adapter.task.size, adapter.task.source) == (0, 1, "horovod")
  assert adapter.options.compression == "fp16" and adapter.started


def test_only_the_first_horovod_rank_writes_checkpoints_and_summaries(tf_config):
  def config(rank):
    adapter = ed.create_strategy("horovod", task=ed.TaskInfo("chief" if rank == 0 else "worker",
                                                            rank, rank, 2))
    return adapter.run_config("/tmp/m", save_checkpoints_steps=100)
  chief, other = config(0), config(1)
  assert (chief.save_checkpoints_steps, chief.save_summary_steps) == (100, 100)
  assert (other.save_checkpoints_steps, other.save_checkpoints_secs, other.save_summary_steps,
          other.log_step_count_steps) == (None, None, None, None)


def test_unknown_strategy():
  with pytest.raises(ed.ConfigError, match=r"strategy \('ring'\) is not one of local, mirrored"):
    ed.create_strategy("ring")


def test_unknown_option_lists_the_known_ones():
  with pytest.raises(ed.ConfigError, match=r"does not take option\(s\) \['fusion'\]; it takes "
                     r"\['autotune', 'backward_passes_per_step', 'batch_size', 'compression'"):
    ed.create_strategy("horovod", fusion=64)


@pytest.mark.parametrize("options,message", [
    ({"reduction": "max"}, r"reduction \('max'\) must be one of average, sum, adasum"),
    ({"compression": "int8"}, r"compression \('int8'\) must be one of none, fp16"),
    ({"backward_passes_per_step": 0}, r"backward_passes_per_step \(0\) must be a positive"),
    ({"reduction": "sum", "gradient_predivide_factor": 2.0}, "works only with reduction='average'"),
])
def test_bad_horovod_options(tf_config, options, message):
  with pytest.raises(ed.ConfigError, match=message):
    ed.create_strategy("horovod", **options)


def test_parameter_server_without_cluster(tf_config):
  with pytest.raises(ed.ClusterConfigError, match="needs ps tasks, but TF_CONFIG has no cluster"):
    ed.create_strategy("parameter_server")


def test_parameter_server_without_ps(tf_config):
  tf_config(CHIEF_WORKER)
  with pytest.raises(ed.ClusterConfigError, match=r"needs at least one 'ps' task, but TF_CONFIG's "
                     r"cluster has \['chief', 'worker'\]"):
    ed.create_strategy("parameter_server")


def test_multi_worker_refuses_ps(tf_config):
  tf_config(dict(CHIEF_WORKER, ps=["127.0.0.1:3"]))
  with pytest.raises(ed.ClusterConfigError, match="has 'ps' tasks, which strategy 'multi_worker' "
                     "does not use"):
    ed.create_strategy("multi_worker")


@pytest.mark.parametrize("name", ["local", "mirrored", "horovod"])
def test_single_process_strategies_refuse_a_cluster(tf_config, name):
  tf_config(CHIEF_WORKER)
  with pytest.raises(ed.ClusterConfigError) as e:
    ed.create_strategy(name)
  assert str(e.value) == (
      f"strategy '{name}' does not use TF_CONFIG, but TF_CONFIG describes a cluster ['chief', "
      f"'worker'], which Estimator would wait for. Unset TF_CONFIG (the launcher does), or "
      f"pick multi_worker or parameter_server to train on that cluster.")


def test_bad_multi_worker_communication(tf_config):
  with pytest.raises(ed.ConfigError, match=r"communication \('mpi'\) must be one of auto, ring"):
    ed.create_strategy("multi_worker", communication="mpi")
