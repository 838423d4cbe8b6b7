"""Early stopping stops every task of every strategy at one global step; exporters."""

import re

import pytest
import tensorflow as tf

import estimator_dist as ed
from estimator_dist.task import early_stopping
from estimator_dist.task import evaluation
from tests import helpers

STRATEGIES = ["horovod", "multi_worker", "mirrored", "parameter_server"]
_STOPPED = re.compile(r"^\[(\w+:\d)\] .*early stopping at global step (\d+)", re.M)


def stops(output):
  """{task: the global step it stopped at}."""
  return {task: int(step) for task, step in _STOPPED.findall(output)}


def write_evaluations(eval_dir, points):
  """Eval summaries as Estimator.evaluate writes them: {step: {metric: value}}."""
  with tf.Graph().as_default():
    writer = tf.compat.v1.summary.FileWriter(str(eval_dir))
    for step, metrics in points.items():
      values = [tf.compat.v1.Summary.Value(tag=k, simple_value=v) for k, v in metrics.items()]
      writer.add_summary(tf.compat.v1.Summary(value=values), step)
    writer.close()


def test_no_improvement_for_the_patience_is_the_reason_to_stop(tmp_path):
  write_evaluations(tmp_path, {100: {"loss": 0.5}, 200: {"loss": 0.3}, 300: {"loss": 0.4}})
  loss = ed.EarlyStopping(metric="loss", mode="min", patience_steps=100)
  assert loss.reason(str(tmp_path)) == (
      "eval loss has not decreased for 100 steps (best 0.3 at step 200, patience 100)")
  assert ed.EarlyStopping(metric="loss", patience_steps=101).reason(str(tmp_path)) is None
  # "max": the highest loss was at step 100, 200 steps ago.
  assert ed.EarlyStopping(metric="loss", mode="max", patience_steps=200).reason(
      str(tmp_path)).startswith("eval loss has not increased for 200 steps")
  assert loss.reason(str(tmp_path / "none_yet")) is None
  with pytest.raises(ed.ConfigError, match=r"watches eval metric 'acc', but the evaluations "
                     r"have only \['loss'\]"):
    ed.EarlyStopping(metric="acc", patience_steps=1).reason(str(tmp_path))


def test_early_stopping_options_are_checked():
  with pytest.raises(ed.ConfigError, match=r"--early_stopping_mode \('down'\) must be one of min, max"):
    ed.EarlyStopping(mode="down", patience_steps=5)
  with pytest.raises(ed.ConfigError, match="patience_steps"):
    ed.EarlyStopping(patience_steps=0)
  with pytest.raises(ed.ConfigError, match="early_stopping must be an EarlyStopping"):
    ed.TrainOptions(model_dir="/tmp/x", train_steps=5, early_stopping=100)


def test_tensorflows_stop_hooks_become_conditions(tmp_path):
  estimator = tf.estimator.Estimator(lambda features, labels, mode: None, model_dir=str(tmp_path))
  stop = tf.estimator.experimental.stop_if_higher_hook(estimator, "loss", 1.0)
  other = tf.estimator.StopAtStepHook(last_step=5)
  hooks, conditions = early_stopping.split_hooks([stop, other])
  assert hooks == [other] and len(conditions) == 1
  assert conditions[0]() is False  # No evaluation yet.
  write_evaluations(tmp_path / "eval", {100: {"loss": 2.0}})
  assert conditions[0]() is True


def test_exporters_need_a_serving_input_and_known_kinds():
  with pytest.raises(ed.ConfigError, match="the latest exporter needs a "
                     "serving_input_receiver_fn"):
    evaluation.exporters(["latest"], None, exports_to_keep=5)
  with pytest.raises(ed.ConfigError, match="'newest' is neither a tf.estimator.Exporter"):
    evaluation.exporters(["newest"], lambda: None, exports_to_keep=5)
  made = evaluation.exporters(["latest", "best", "final"], lambda: None, exports_to_keep=2)
  assert [type(e).__name__ for e in made] == ["LatestExporter", "BestExporter",
                                              "FinalExporter"]
  with pytest.raises(ed.ConfigError, match="exporters need different names"):
    evaluation.exporters(["final", tf.estimator.FinalExporter("final", lambda: None)],
                         lambda: None, exports_to_keep=1)


def test_exporters_and_early_stopping_need_an_eval_input_fn(tmp_path):
  with pytest.raises(ed.ConfigError, match="pass an eval_input_fn"):
    ed.train_and_evaluate(lambda features, labels, mode: None, lambda: None,
                          model_dir=str(tmp_path), train_steps=5,
                          early_stopping=ed.EarlyStopping(patience_steps=5))


@pytest.mark.processes
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_early_stopping_option_stops_every_task_at_one_step(strategy, tmp_path):
  # The eval loss falls, so "it has not risen for 100 steps" comes true at the second
  # evaluation 100 steps after the first.
  launch_args = ["--evaluator"] if strategy == "parameter_server" else []
  code, output = helpers.launch(
      strategy, "tests.programs.plain_model", f"--model_dir={tmp_path}", "--train_steps=20000",
      "--save_checkpoints_steps=50", "--eval_throttle_secs=0",
      "--early_stopping_metric=loss", "--early_stopping_mode=max",
      "--early_stopping_patience_steps=100", launch_args=launch_args)
  assert code == 0, output[-3000:]
  stopped = stops(output)
  tasks = {"mirrored": {"chief:0"}, "horovod": {"worker:0", "worker:1"}}.get(
      strategy, {"chief:0", "worker:0"})
  assert set(stopped) == tasks, output[-3000:]
  assert re.search(r"early stopping at global step \d+: eval loss has not increased for "
                   r"\d+ steps \(best \S+ at step \d+, patience 100\)", output), output[-3000:]
  summary, = helpers.summaries(output)
  if strategy == "parameter_server":  # Asynchronous: the worker stops at its next check.
    assert max(stopped.values()) < 20000
    assert "the evaluator ends" in output, output[-3000:]
  else:
    step, = set(stopped.values())
    assert int(summary["steps"]) == step < 20000
    assert len(set(re.findall(r"steps_run=(\d+)", output))) == 1, output[-3000:]


@pytest.mark.processes
def test_tensorflows_stop_if_hook_stops_every_worker(tmp_path):
  """stop_if_higher_hook of a canned Estimator: under multi_worker TensorFlow stops only
  the chief, and worker:0 waits in an all-reduce until a timeout."""
  code, output = helpers.launch(
      "multi_worker", "tests.programs.canned_model", f"--model_dir={tmp_path}",
      "--train_steps=20000", "--save_checkpoints_steps=50", "--eval_throttle_secs=0",
      "--stop_if_loss_above=0")
  assert code == 0, output[-3000:]
  stopped = stops(output)
  assert set(stopped) == {"chief:0", "worker:0"}, output[-3000:]
  assert len(set(stopped.values())) == 1, stopped
  assert "the condition of a tf.estimator.experimental.stop_if_* hook held" in output
  summary, = helpers.summaries(output)
  assert int(summary["steps"]) == stopped["chief:0"] < 20000
