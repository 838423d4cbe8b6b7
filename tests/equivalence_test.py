"""Distributed training does the math of one worker, measured with `estimator-dist verify`."""

import re

import pytest
import tensorflow as tf

import estimator_dist as ed
from estimator_dist.training import rate_record
from estimator_dist.verification import verify_runs
from model_zoo import mnist_dnn
from tests import helpers

pytestmark = pytest.mark.processes

_RESULT = re.compile(r"max relative difference (\S+) (<=|>) tolerance (\S+): (PASS|FAIL)")


def run_verify(*args, timeout=300):
  script = helpers.os.path.join(helpers.os.path.dirname(helpers.PYTHON), "estimator-dist")
  code, output = helpers.run([script, "verify", *args], timeout=timeout)
  found = _RESULT.search(output)
  assert found, output[-4000:]
  return code, float(found.group(1)), found.group(4), output


def test_horovod_matches_one_worker_on_the_cnn():
  code, worst, verdict, output = run_verify("--strategy=horovod", "--num_workers=2",
                                            "--module=model_zoo.mnist_cnn")
  assert (code, verdict) == (0, "PASS"), output[-3000:]
  assert worst <= 1e-5
  assert re.search(r"horovod\s+2\s+32\s+0.01\n", output)


# The one-worker runs that distributed runs are compared with, each trained once for the
# tests below (in one process of the suite), as `estimator-dist verify` trains its own: the
# same program, flags and environment; the runs of one module start from one initial
# checkpoint.
_DNN = "model_zoo.mnist_dnn"
_VERIFY_ENV = {"TF_ENABLE_ONEDNN_OPTS": "0"}  # As verify runs both of its runs.
reference_group = pytest.mark.xdist_group("verify_references")


def _train(module, model_dir, strategy, workers, batch, rate, scaling, *extra):
  """A run of `module` as verify starts it (`verify --train_only` through the launcher);
  its output."""
  code, output = helpers.run(helpers.launch_command(
      f"--strategy={strategy}", f"--num_workers={workers}",
      program=(helpers.PYTHON, "-m", "estimator_dist.verification.verify", "--train_only", *extra,
               f"--module={module}", f"--model_dir={model_dir}", "--train_steps=10",
               f"--batch_size={batch}", f"--learning_rate={rate}", f"--lr_scaling={scaling}")),
      env=helpers.child_env(**_VERIFY_ENV))
  assert code == 0, output[-3000:]
  return output


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
  """reference(batch, rate, module=DNN): the model_dir of the one-worker run at that batch
  and rate, trained on first use from the module's first run's initial checkpoint, unless
  reference.verify made it."""
  root, made = tmp_path_factory.mktemp("references"), {}

  def trained(batch, rate, module=_DNN):
    if (module, batch, rate) not in made:
      model_dir = root / f"{module}_{batch}_{rate}"
      first = next((d for (m, _, _), d in made.items() if m == module), None)
      if first:
        verify_runs.start_from(str(first), str(model_dir))
      _train(module, model_dir, "local", 1, batch, rate, "none")
      made[module, batch, rate] = model_dir
    return made[module, batch, rate]

  def verified(*args, batch, rate, module=_DNN):
    """`estimator-dist verify ARGS --module=MODULE` with its runs kept: run_verify's
    result. Its one-worker run (at `batch` and `rate`) becomes that reference, unless
    there is one already."""
    work = root / f"verify_{len(list(root.iterdir()))}"
    result = run_verify(*args, f"--module={module}", f"--work_dir={work}")
    made.setdefault((module, batch, rate), work / "single")
    return result

  trained.verify = verified
  return trained


def _distributed(reference_dir, model_dir, strategy, workers, batch, *extra, scaling="none",
                 module=_DNN, rate=0.01):
  """verify's distributed run, from `reference_dir`'s initial checkpoint: (the largest
  relative weight difference against it, the rate the chief scaled to or None, the output)."""
  verify_runs.start_from(str(reference_dir), str(model_dir))
  output = _train(module, model_dir, strategy, workers, batch, rate, scaling, *extra)
  rows = verify_runs.compare(str(reference_dir), str(model_dir))
  assert rows, output[-3000:]
  record = rate_record.read(str(model_dir))
  return max(r[3] for r in rows), record and record.scaled, output


@reference_group
@pytest.mark.parametrize("strategy", ["multi_worker", "mirrored"])
def test_synchronous_strategies_match_one_worker_at_the_same_global_batch(
    strategy, reference, tmp_path):
  worst, rate, _ = _distributed(reference(64, 0.01), tmp_path / "distributed", strategy, 2,
                                32)
  assert worst <= 1e-5 and f"{rate:g}" == "0.01", (worst, rate)


@reference_group
def test_a_keras_estimator_matches_one_worker_under_horovod_and_multi_worker(reference,
                                                                            tmp_path):
  """A model_to_estimator conv net with its own optimizer and rate, given to verify as an
  Estimator: verify names the rate the model's own. The multi_worker run is compared
  with verify's one-worker run."""
  module = "tests.programs.keras_model"
  code, worst, verdict, output = reference.verify("--strategy=horovod", "--num_workers=2",
                                                  batch=64, rate=0.01, module=module)
  assert (code, verdict) == (0, "PASS"), output[-3000:]
  assert worst <= 1e-5
  assert re.search(r"horovod\s+2\s+32\s+the model's own\n", output)
  worst, rate, _ = _distributed(reference(64, 0.01, module), tmp_path / "multi_worker",
                                "multi_worker", 2, 32, module=module)
  assert worst <= 1e-5 and rate is None, (worst, rate)


@reference_group
@pytest.mark.parametrize("strategy", ["horovod", "multi_worker"])
def test_a_canned_estimator_matches_one_worker(strategy, reference, tmp_path):
  """A canned DNNClassifier with its own optimizer and rate, as verify trains it: the
  rate stays the model's own (no record of a scaled one)."""
  module = "tests.programs.canned_model"
  worst, rate, _ = _distributed(reference(64, 0.01, module), tmp_path / "distributed",
                                strategy, 2, 32, module=module)
  assert worst <= 1e-5 and rate is None, (worst, rate)


@reference_group
def test_parameter_server_with_one_worker_is_the_single_worker_run(reference, tmp_path):
  worst, _, _ = _distributed(reference(32, 0.04), tmp_path / "distributed",
                             "parameter_server", 1, 32, rate=0.04)
  assert worst <= 1e-6, worst


@reference_group
def test_linear_scaling_changes_exactly_the_learning_rate(reference, tmp_path):
  worst_at_base, rate, _ = _distributed(reference(64, 0.01), tmp_path / "distributed",
                                        "horovod", 2, 32, scaling="linear")
  assert f"{rate:g}" == "0.02", rate
  # Same global batch, rate doubled: no longer the single-worker run at 0.01 ...
  assert worst_at_base > 1e-2, worst_at_base
  # ... but exactly the single-worker run at 0.02 (from the same initial checkpoint).
  rows = verify_runs.compare(str(reference(64, 0.02)), str(tmp_path / "distributed"))
  assert rows and max(r[3] for r in rows) <= 1e-5, rows


def test_sparse_gradients_of_different_lengths_match_one_worker_under_multi_worker():
  """tests/programs/sparse_embeddings.py, as written: its two embeddings' gradients,
  all-reduced dense, are one worker's on the joined batches."""
  code, worst, verdict, output = run_verify(
      "--strategy=multi_worker", "--num_workers=2", "--lr_scaling=none", "--",
      helpers.PYTHON, "-m", "tests.programs.sparse_embeddings")
  assert (code, verdict) == (0, "PASS") and worst <= 1e-5, output[-3000:]
  assert len(re.findall(r"^  dnn/input_from_feature_columns/input_layer/\w+_embedding/"
                        r"embedding_weights ", output, re.MULTILINE)) == 2, output[-3000:]


def test_verify_catches_workers_that_read_the_same_data(tmp_path):
  code, worst, verdict, output = run_verify("--strategy=horovod",
                                            "--module=tests.programs.unsharded_model",
                                            f"--work_dir={tmp_path}")
  assert (code, verdict) == (1, "FAIL") and worst > 1e-2, output[-3000:]
  assert f"the two runs and their logs are in {tmp_path}" in output


# Every parameter_server worker's update reaches the shared variables: integration_test's
# parameter_server job.


CHAIN = [("local", 1, 64), ("horovod", 2, 32), ("multi_worker", 2, 32),
         ("parameter_server", 1, 64)]


def test_checkpoints_resume_under_another_strategy(tmp_path):
  """local -> horovod -> multi_worker -> parameter_server, 5 steps each at one global
  batch, ends where four local segments from the same start end."""
  chain = tmp_path / "chain"
  for i, (strategy, workers, batch) in enumerate(CHAIN):
    steps = 5 * (i + 1)
    code, output = helpers.launch(
        strategy, "estimator_dist.verification.verify", "--train_only", "--module=model_zoo.mnist_dnn",
        f"--model_dir={chain}", f"--train_steps={steps}", f"--batch_size={batch}",
        "--lr_scaling=none", num_workers=workers)
    assert code == 0, output[-3000:]
    if i:
      assert re.search(rf"Restoring parameters from \S*model.ckpt-{steps - 5}\n",
                       helpers.task_logs(str(chain))), output[-3000:]
  assert tf.train.load_checkpoint(str(chain)).get_tensor("global_step") == 20

  # The reference: four local segments in this process, from the chain's first checkpoint.
  local = tmp_path / "local"
  verify_runs.start_from(str(chain), str(local))
  for steps in (5, 10, 15, 20):
    ed.train_and_evaluate(mnist_dnn.model_fn, mnist_dnn.input_fn, model_dir=str(local),
                          train_steps=steps, params={"batch_size": 64}, learning_rate=0.01,
                          lr_scaling="none")
  rows = verify_runs.compare(str(local), str(chain))
  assert rows and max(r[3] for r in rows) <= 1e-5, rows


@reference_group
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_a_fixed_global_batch_is_one_update_on_any_number_of_workers(workers, reference,
                                                                       tmp_path):
  """Global batch 32 in micro-batches of 8: 1 worker x 4 passes, 2 x 2 and 4 x 1.

  Each is 10 applied updates (global_step counts updates, not micro-batches) that match
  one worker at batch 32; the learning rate follows the global batch (x4), not the
  number of workers.
  """
  worst, rate, output = _distributed(reference(32, 0.04), tmp_path / "distributed",
                                     "horovod", workers, 8, "--global_batch_size=32",
                                     scaling="linear")
  assert worst <= 1e-5 and f"{rate:g}" == "0.04", (worst, rate)
  assert f"global batch 32: {4 // workers} micro-batch(es) of 8 on this rank per update" in (
      output), output[-3000:]
