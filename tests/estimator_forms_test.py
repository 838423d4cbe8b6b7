"""model_fns as other projects write them, trained on 2 workers with no change."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_estimator.python.estimator.early_stopping import read_eval_metrics

from tests import helpers
from tests.programs import keras_model

pytestmark = pytest.mark.processes

PROGRAM = "tests.programs.constant_rate_model"
STRATEGIES = ["horovod", "multi_worker", "mirrored", "parameter_server"]


@pytest.mark.parametrize("strategy", ["horovod", "multi_worker", "mirrored"])
def test_horovods_estimator_example_trains_unchanged(strategy, tmp_path):
  """Horovod's Estimator example: AdamOptimizer(0.001), no params, numpy_input_fn
  (queues). Its constant rate is scaled; each worker reads its share of the arrays as a
  Dataset; under mirrored, replica threads share the one rate. (The canned and Keras
  forms below train under all four strategies.)"""
  code, output = helpers.launch(strategy, PROGRAM, f"--model_dir={tmp_path}", "--numpy_input")
  assert code == 0, output[-3000:]
  assert ("learning rate 0.001 (from the AdamOptimizer built in the model_fn) x 2 (linear "
          "scaling, 2 replicas) = 0.002" in output), output[-3000:]
  if strategy == "horovod":  # The chief logs its share (mirrored has one pipeline).
    assert "training input is shard 0 of 2, by batch" in output, output[-3000:]
  summary, = helpers.summaries(output)
  assert float(summary["eval_accuracy"]) >= 0.9, summary


def test_a_train_op_that_never_advances_the_global_step_fails_at_once(tmp_path):
  """The DistributionStrategy README's model_fn: minimize(loss) without the global step."""
  code, output = helpers.launch("multi_worker", PROGRAM, f"--model_dir={tmp_path}",
                                "--nopass_global_step", timeout=180)
  assert code == 2, output[-3000:]
  assert ("error: the train_op does not advance the global step: it is still 0 after 20 "
          "session runs" in output), output[-3000:]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_canned_estimator_trains_with_its_own_optimizer(strategy, tmp_path):
  """DNNClassifier with feature columns and a legacy Keras Adagrad at 0.1, built before
  anything else in its program; the toolkit started the strategy before it."""
  code, output = helpers.launch(strategy, "tests.programs.canned_model",
                                f"--model_dir={tmp_path}")
  assert code == 0, output[-3000:]
  summary, = helpers.summaries(output)
  assert float(summary["eval_accuracy"]) >= 0.9, summary
  if strategy != "parameter_server":  # Asynchronous: its rate stays as it is.
    assert ("learning rate 0.1 (from the Adagrad built in the model_fn) x 2 (linear scaling, "
            "2 replicas) = 0.2" in output), output[-3000:]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_keras_model_trains_evaluates_along_the_way_and_exports(strategy, tmp_path):
  """A conv net compiled with a current Keras Adam, through model_to_estimator, built
  before anything else in its program. 600 steps, a checkpoint every 100, and a step
  that takes 10 ms or more (a model slower than its evaluation)."""
  launch_args = ["--evaluator"] if strategy == "parameter_server" else []
  # parameter_server's two workers add their steps to one global step: twice as fast.
  step_secs = 0.02 if strategy == "parameter_server" else 0.01
  code, output = helpers.launch(
      strategy, "tests.programs.keras_model", f"--model_dir={tmp_path}", "--train_steps=600",
      "--save_checkpoints_steps=100", "--eval_throttle_secs=0", f"--step_secs={step_secs}",
      "--exporters=latest,best,final", launch_args=launch_args)
  assert code == 0, output[-3000:]
  summary, = helpers.summaries(output)
  assert float(summary["eval_accuracy"]) >= 0.9, summary
  if strategy != "parameter_server":
    assert ("learning rate 0.005 (from the Adam built in the model_fn) x 2 (linear scaling, "
            "2 replicas) = 0.01" in output), output[-3000:]

  # An eval curve in TensorBoard: the chief (parameter_server: the evaluator task)
  # evaluated checkpoints while training ran, not only the last one.
  curve = read_eval_metrics(str(tmp_path / "eval"))
  assert len(curve) >= 5 and max(curve) >= 600, list(curve)

  # One process exported, after evaluations and once at the end.
  exports = {kind: sorted((tmp_path / "export" / kind).iterdir())
             for kind in ("latest", "best", "final")}
  assert len(exports["final"]) == 1 and 2 <= len(exports["latest"]) <= 5, exports
  assert exports["best"] and output.count("(final exporter)") == 1, exports

  # The final export, loaded in a process of its own, predicts what the Estimator does.
  x_eval = keras_model._X_EVAL  # pylint: disable=protected-access
  np.save(tmp_path / "images.npy", x_eval)
  code, loaded = helpers.run([helpers.PYTHON, "-m", "tests.programs.load_export",
                              str(exports["final"][0]), "image_input",
                              str(tmp_path / "images.npy"), "dense",
                              str(tmp_path / "served.npy")], timeout=120)
  assert code == 0, loaded[-3000:]
  tf.keras.backend.clear_session()  # Layer names as in a fresh process: "dense".
  estimator = keras_model.estimator(model_dir=str(tmp_path))
  predicted = np.array([p["dense"] for p in estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({"image_input": x_eval}).batch(100))])
  assert np.max(np.abs(np.load(tmp_path / "served.npy") - predicted)) <= 1e-5


def test_a_keras_layer_that_branches_in_python_builds_as_under_a_plain_estimator(tmp_path):
  """mirrored runs the model_fn in call_for_each_replica, which would convert (or not)
  everything under it; the layer's own call is converted as under a plain Estimator."""
  code, output = helpers.launch("mirrored", "tests.programs.python_control_flow_layer",
                                f"--model_dir={tmp_path}", "--eval_steps=1")
  assert code == 0, output[-3000:]
  assert helpers.summaries(output), output[-3000:]
