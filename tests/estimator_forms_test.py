"""model_fns as other projects write them, trained on 2 workers with no change."""

import pytest

from tests import helpers

pytestmark = pytest.mark.processes

PROGRAM = "tests.programs.constant_rate_model"
STRATEGIES = ["horovod", "multi_worker", "mirrored", "parameter_server"]


@pytest.mark.parametrize("strategy", ["horovod", "multi_worker", "mirrored"])
def test_a_constant_rate_in_the_model_fns_optimizer_is_scaled(strategy, tmp_path):
  """Horovod's Estimator example: AdamOptimizer(0.001), no params."""
  code, output = helpers.launch(strategy, PROGRAM, f"--model_dir={tmp_path}")
  assert code == 0, output[-3000:]
  assert ("learning rate 0.001 (from the AdamOptimizer built in the model_fn) x 2 (linear "
          "scaling, 2 replicas) = 0.002" in output), output[-3000:]
  summary, = helpers.summaries(output)
  assert float(summary["eval_accuracy"]) >= 0.9, summary


@pytest.mark.parametrize("strategy", ["horovod", "mirrored"])
def test_horovods_estimator_example_with_numpy_input_trains(strategy, tmp_path):
  """numpy_input_fn (queues) and a constant-rate AdamOptimizer: each worker reads its
  share of the arrays as a Dataset."""
  code, output = helpers.launch(strategy, PROGRAM, f"--model_dir={tmp_path}", "--numpy_input")
  assert code == 0, output[-3000:]
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
