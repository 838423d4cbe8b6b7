"""A run's life: building it starts nothing; `start()` starts the backend once, and the
run, not the adapter, gives an evaluator task its role."""

import json
import os

import pytest
import tensorflow as tf

import estimator_dist as ed
from estimator_dist.strategies import factory
from estimator_dist.training import peer_loss
from estimator_dist.training import run as run_lib
from tests.programs import plain_model

# A legacy 'master' that starting would publish as 'chief'.
CLUSTER = {"master": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "evaluator": ["127.0.0.1:3"]}


def train_input_fn():
  return tf.data.Dataset.from_tensors(({"x": tf.zeros([1, 8])}, tf.zeros([1], tf.int32)))


def training_run(tmp_path, **fields):
  options = ed.TrainOptions(strategy="multi_worker", model_dir=str(tmp_path), train_steps=1,
                            strategy_options={"cpu_affinity": "none"})
  return run_lib.TrainingRun(model=plain_model.model_fn, train_input_fn=train_input_fn,
                             options=options, **fields)


@pytest.fixture
def evaluator_task(monkeypatch):
  monkeypatch.setattr(factory, "_started", None)  # This process's, put back after.
  text = json.dumps({"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}})
  monkeypatch.setenv("TF_CONFIG", text)
  return text


def test_building_a_run_starts_nothing_and_running_it_unstarted_is_refused(tmp_path,
                                                                            evaluator_task):
  run = training_run(tmp_path, eval_input_fn=train_input_fn)
  assert run.adapter is None and os.environ["TF_CONFIG"] == evaluator_task
  assert factory._started is None  # pylint: disable=protected-access
  with pytest.raises(RuntimeError, match=r"before start\(\)"):
    run.run()


def test_start_returns_the_started_adapter_and_publishes_the_cluster(tmp_path, evaluator_task):
  run = training_run(tmp_path, eval_input_fn=train_input_fn)
  adapter = run.start()
  assert adapter is run.adapter and adapter.started and adapter.task.role == "evaluator"
  assert "chief" in json.loads(os.environ["TF_CONFIG"])["cluster"]  # 'master' renamed.
  assert factory._started is adapter  # pylint: disable=protected-access
  # Asked for the same strategy and options again, the process's adapter is handed out.
  assert factory.adapter_for("multi_worker", run.options.backend_options) is adapter


def test_an_evaluator_task_without_an_eval_input_fn_is_refused_when_it_starts(tmp_path,
                                                                             evaluator_task):
  run = training_run(tmp_path)  # Building checks nothing that needs the task.
  with pytest.raises(ed.ConfigError, match="evaluator task but no eval_input_fn"):
    run.start()


def test_an_error_from_a_peer_is_said_by_its_cause_not_its_heading():
  # A session's errors start "Graph execution error:", then the node's definition.
  with tf.Graph().as_default(), tf.compat.v1.Session() as session:
    with pytest.raises(tf.errors.NotFoundError) as raised:
      session.run(tf.io.read_file("/nonexistent/x"))
  assert raised.value.message.startswith("Graph execution error:"), raised.value.message
  assert peer_loss.cause_of(raised.value.message) == "/nonexistent/x; No such file or directory"
  assert peer_loss.cause_of("Socket closed") == "Socket closed"
  assert peer_loss.cause_of(None) == ""



def test_a_rounds_hooks_are_the_parts_then_the_adapters_then_the_stop_then_the_users(tmp_path):
  # The stop decides after the adapter's hooks: an elastic round that restarts first
  # (its host check raises) stops nothing.
  adapter_hook, user_hook = tf.estimator.SessionRunHook(), tf.estimator.SessionRunHook()
  options = ed.TrainOptions(model_dir=str(tmp_path), train_steps=5,
                            early_stopping=ed.EarlyStopping(patience_steps=10))
  run = run_lib.TrainingRun(model=plain_model.model_fn, train_input_fn=train_input_fn,
                            eval_input_fn=train_input_fn, options=options, hooks=[user_hook])
  adapter = factory.adapter_class("local")(task=ed.TaskInfo("chief", 0, 0, 1))
  kinds = [type(h).__name__ for h in run.train_spec(adapter, (adapter_hook,)).hooks]
  assert kinds[0] == "FitsTheModel" and kinds[-3:] == [
      "SessionRunHook", "StopTogether", "SessionRunHook"], kinds
