"""Programs that never import estimator_dist, trained through the launcher as written."""

import ast
import functools
import math
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from estimator_dist.instrument import launching
from estimator_dist.outputs import event_files
from tests import helpers

PREMADE = "tests.programs.upstream.premade_estimator"
KERAS = "tests.programs.upstream.keras_model_to_estimator"
HOROVOD_EXAMPLE = "tests.programs.upstream.tensorflow_mnist_estimator"
TUTORIAL = "tests.programs.upstream.multi_worker_with_estimator"


def test_a_program_is_ours_when_its_main_file_imports_estimator_dist(tmp_path):
  cases = {"import estimator_dist as ed\n": True, "from estimator_dist import x\n": True,
           "  import estimator_dist\n": True,
           '"""Trained by estimator_dist."""\nimport tensorflow as tf\n': False,
           "# estimator_dist\nimport tensorflow\n": False}
  for number, (text, ours) in enumerate(cases.items()):
    path = tmp_path / f"p{number}.py"
    path.write_text(text)
    assert launching.program_is_ours(str(path)) is ours, text
  assert launching.program_is_ours(str(tmp_path / "missing.py"))  # Left alone.
  assert launching.program_is_ours(None)  # python -c: nothing to read.


def test_a_module_is_found_from_the_working_directory_as_python_m_finds_it(tmp_path,
                                                                           monkeypatch):
  (tmp_path / "their_trainer.py").write_text("import tensorflow as tf\n")
  monkeypatch.chdir(tmp_path)
  # The console script's sys.path has its own directory first, not the working one.
  monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
  assert launching.instrumented([sys.executable, "-m", "their_trainer"]) == str(
      tmp_path / "their_trainer.py")
  assert str(tmp_path) not in sys.path


def test_the_launcher_knows_which_program_a_command_runs():
  python = sys.executable
  upstream = launching.program_file([python, "-m", PREMADE, "--flag"])
  assert upstream.endswith("tests/programs/upstream/premade_estimator.py")
  assert launching.instrumented([python, "-m", PREMADE]) == upstream
  assert launching.instrumented([python, "-m", "tests.programs.plain_model"]) is None  # Ours.
  assert launching.program_file([python, "train.py", "-x"]) == "train.py"
  for command in ([python, "-c", "print()"], ["bash", "run.sh"], [python, "-m", "no.such"],
                  [python]):
    assert launching.program_file(command) is None, command
  env = launching.task_env({"PYTHONPATH": "/theirs"}, upstream)
  assert env["PYTHONPATH"] == os.pathsep.join([launching.SITE, "/theirs"])
  assert env["ESTIMATOR_DIST_INSTRUMENT"] == upstream
  assert launching.task_env({}, upstream)["PYTHONPATH"] == launching.SITE


def test_the_sitecustomize_runs_the_one_it_shadows(tmp_path):
  (tmp_path / "sitecustomize.py").write_text("print('theirs ran')\n")
  env = {**os.environ, "PYTHONPATH": os.pathsep.join([launching.SITE, str(tmp_path)]),
         "ESTIMATOR_DIST_STRATEGY": "multi_worker", "ESTIMATOR_DIST_INSTRUMENT": "train.py"}
  done = subprocess.run([sys.executable, "-c", "import sys; print('tensorflow' in sys.modules)"],
                        env=env, capture_output=True, text=True, timeout=60, check=True)
  assert done.stdout.split() == ["theirs", "ran", "False"], done  # TensorFlow stays unloaded.


@pytest.mark.processes
def test_a_program_of_train_and_evaluate_rounds_then_an_export_trains_unchanged(tmp_path):
  """tests/programs/train_rounds.py under parameter_server: its own --job-dir and model_dir,
  three rounds of train(steps=40) and evaluate(), then export_saved_model(), which it loads
  and predicts with. Every round trains on every task to the chief's step (the ps serves
  until the program ends), every task returns the chief's metrics and export path."""
  job_dir = tmp_path / "job"
  code, output = helpers.launch("parameter_server", "tests.programs.train_rounds",
                                f"--job-dir={job_dir}", timeout=300)
  assert code == 0, output[-3000:]
  assert "[ps:0] estimator-dist: instrumented train_rounds.py: ps:0 serves" in output
  printed = {task: [line.split("] ", 1)[1] for line in output.splitlines()
                    if line.startswith(f"[{task}] round ") or
                    line.startswith(f"[{task}] exported ")]
             for task in ("chief:0", "worker:0")}
  assert printed["chief:0"] == printed["worker:0"] and len(printed["chief:0"]) == 4, printed
  steps = [int(re.search(r"step (\d+)", line).group(1)) for line in printed["chief:0"][:3]]
  # Asynchronous: a round may end a step or two past its target, the next starts there.
  assert all(40 <= b - a <= 42 for a, b in zip([0, *steps], steps)), steps
  export = re.search(r"exported (\S+) predicts \[", printed["chief:0"][3]).group(1)
  assert os.path.dirname(export) == str(job_dir / "export") and os.path.isdir(export)
  assert (f"the program trained in its own model_dir, {job_dir / 'model'} (the chief's)"
          in output), output[-3000:]


@pytest.mark.processes
@pytest.mark.parametrize("extra_on, args, code, says", [
    # The chief ended, or made its export first (which comes first, the worker sees).
    ("worker", (), 2, "[worker:0] estimator-dist: error: worker:0 made train() call 2, "
                      "which the chief never makes: it "),
    ("chief", (), 2, "[worker:0] estimator-dist: error: worker:0 made export() call 1, which "
                     "the chief never makes: it made train() call 2 first, where worker:0 "
                     "had made 1 train() call."),
    # The worker ends (exit 0) while the chief waits for it in its round: the launcher.
    ("chief", ("--no-export",), 1, "estimator-dist launch: the chief made train() call 2, "
                                   "which worker:0 never made: it ended after 1 train() "
                                   "call.")])
def test_a_round_no_other_task_reaches_ends_the_job_in_one_line(tmp_path, extra_on, args, code,
                                                                  says):
  """tests/programs/train_rounds.py with one train() round more on one task, under
  multi_worker: the job once waited for the hang timeout (300 s by default) and said only
  that a heartbeat stopped; now the waiting worker names the call in one line, at once."""
  started = time.monotonic()
  result, output = helpers.launch("multi_worker", "tests.programs.train_rounds",
                                f"--job-dir={tmp_path}", "--rounds=1", "--steps-per-round=10",
                                f"--extra-round-on={extra_on}", *args, timeout=240)
  assert result == code, output[-3000:]
  assert says in output, output[-3000:]
  assert "heartbeat" not in output.split(says)[1], output[-3000:]
  print(f"measured: one more train() on the {extra_on}: the job ended with the one line "
        f"in {time.monotonic() - started:.1f} s (hang timeout 300 s)")


@pytest.mark.processes
@pytest.mark.parametrize("strategy, processes", [("multi_worker", 2), ("mirrored", 1)])
def test_cloud_mls_census_trainer_trains_under_the_collective_strategies(tmp_path, strategy,
                                                                         processes):
  """Cloud ML's census trainer (tests/programs/upstream), unmodified: its input_fn returns
  an iterator's tensors, and its wide & deep model has sparse gradients (categorical
  columns, embeddings) whose lengths differ between replicas. Once it failed at its first
  step (`Shape mismatch in the collective instance`); they are all-reduced dense now."""
  code, output = helpers.launch(strategy, "tests.programs.upstream.census_estimator",
                                f"--job-dir={tmp_path}", "--train-steps=100", timeout=300)
  assert code == 0, output[-3000:]
  assert output.count("the job all-reduces the Estimator's sparse gradients (embeddings, "
                      "categorical columns) dense") == processes, output[-3000:]
  for index in range(processes if processes > 1 else 0):
    # One file, its label popped in a map: by batch (it said "by file").
    assert f"training input is shard {index} of 2, by batch" in output, output[-3000:]
  summary, = helpers.summaries(output)
  # Its synthetic census's majority class is 0.689 of the evaluation rows (0.769 and 0.774
  # measured; the job's seed makes each run the same).
  assert summary["steps"] == "100" and float(summary["eval_accuracy"]) > 0.72, summary


@pytest.mark.processes
@pytest.mark.parametrize("strategy, args", [("multi_worker", ("--pop_label",)),
                                            ("parameter_server", ())])
def test_a_tf1_input_fn_that_returns_its_iterators_tensors_is_sharded(tmp_path, strategy, args):
  """tests/programs/iterator_input.py, in the shape of Cloud ML Engine's census sample: its
  input_fn returns `make_one_shot_iterator(dataset).get_next()` (as they are, or with the
  label popped out of the features). Once every task failed: `input_fn returned tuple,
  which cannot be split among 2 workers`; now each worker reads its shard of the Dataset."""
  code, output = helpers.launch(strategy, "tests.programs.iterator_input",
                                f"--job-dir={tmp_path}", *args, timeout=240)
  assert code == 0, output[-3000:]
  for index in range(2):
    assert f"training input is shard {index} of 2, by batch" in output, output[-3000:]
  summary, = helpers.summaries(output)
  assert int(summary["steps"]) >= 40 and float(summary["eval_accuracy"]) > 0.5, summary


@pytest.mark.processes
def test_train_without_steps_trains_one_pass_over_the_input_each_round(tmp_path):
  """tests/programs/train_rounds.py --one-pass under multi_worker: train(input_fn) with
  neither steps nor max_steps, as TensorFlow's official r1 MNIST loop calls it (once
  refused: `Estimator.train() in a job needs steps or max_steps`). 512 examples in
  batches of 32 are 16 batches, dealt to 2 workers: 8 synchronous steps a pass."""
  code, output = helpers.launch("multi_worker", "tests.programs.train_rounds",
                                f"--job-dir={tmp_path}", "--rounds=2", "--one-pass",
                                "--no-export", timeout=240)
  assert code == 0, output[-3000:]
  for task in ("chief:0", "worker:0"):
    steps = re.findall(rf"\[{task}\] round \d: step (\d+) ", output)
    assert steps == ["8", "16"], (task, steps, output[-3000:])
  assert ("Estimator.train() has neither steps nor max_steps: one pass over the input is 8 "
          "steps (the smallest worker's share; batches per worker [8, 8])") in output
  code, output = helpers.launch("multi_worker", "tests.programs.train_rounds",
                                f"--job-dir={tmp_path}/endless", "--one-pass", "--endless",
                                timeout=240)
  assert code == 2, output[-3000:]
  assert ("[chief:0] estimator-dist: error: Estimator.train() has neither steps nor "
          "max_steps and its input_fn's dataset is endless (it repeats): a job needs its end "
          "before training, so give train() steps=... (or max_steps=...).") in output, (
              output[-3000:])


@pytest.mark.processes
def test_a_worker_waiting_for_the_chiefs_long_final_evaluation_is_not_a_hang(tmp_path):
  """The chief's final evaluation computes for 12 s, longer than --hang_timeout_secs=6,
  while the worker waits for its metrics (train_and_evaluate's result): once the worker,
  its training ended and its CPU idle, was taken for hung (exit 124); it says it waits."""
  code, output = helpers.launch("multi_worker", "tests.programs.hparams_object",
                                f"--model_dir={tmp_path}", "--train_steps=20",
                                "--eval_busy_secs=12",
                                launch_args=["--hang_timeout_secs=6"], timeout=240)
  assert code == 0, output[-3000:]
  printed = [line for line in output.splitlines() if "] Test set accuracy: " in line]
  assert len(printed) == 2, output[-3000:]


@pytest.mark.processes
def test_a_programs_own_multi_worker_strategy_under_parameter_server_is_one_line():
  """TensorFlow's multi-worker tutorial builds MultiWorkerMirroredStrategy into its
  RunConfig; under parameter_server that once ended in TensorFlow's traceback (`Collective
  ops must be configured at program startup`) on every task."""
  code, output = helpers.launch("parameter_server", TUTORIAL, timeout=240)
  assert code == 2, output[-3000:]
  assert ("estimator-dist: error: the program builds its own MultiWorkerMirroredStrategy, "
          "which cannot run in a task of the job's parameter_server strategy: run the job with --strategy=multi_worker, or "
          "let the job's strategy distribute the program's Estimator (drop its own "
          "strategy).") in output, output[-3000:]
  assert "Traceback" not in output and "Collective ops" not in output, output[-3000:]


@pytest.mark.processes
@pytest.mark.parametrize("strategy", ["multi_worker", "parameter_server"])
def test_a_sites_sitecustomize_that_imports_tensorflow_is_no_obstacle(tmp_path, strategy):
  """A site's own sitecustomize imports TensorFlow (to set its logging) before the program
  starts: instrumentation once gave up silently, every task trained alone and waited, and
  the job ended at the hang timeout naming a heartbeat. Now the job's strategy starts
  there, and a ps task serves from there."""
  site = tmp_path / "site"
  site.mkdir()
  (site / "sitecustomize.py").write_text(
      "import tensorflow as tf\ntf.get_logger().setLevel('ERROR')\n")
  command = helpers.launch_command(
      f"--strategy={strategy}", "--num_workers=2", "--hang_timeout_secs=60",
      program=(helpers.PYTHON, "-m", "tests.programs.hparams_object",
               f"--model_dir={tmp_path / 'model'}"))
  code, output = helpers.run(command, timeout=240, env=helpers.child_env(
      PYTHONPATH=os.pathsep.join([helpers.REPO, str(site)])))
  assert code == 0, output[-3000:]
  printed = {line.split("] ", 1)[1] for line in output.splitlines()
             if re.match(r"\[(chief|worker):0\] Test set accuracy: ", line)}
  assert len(printed) == 1, output[-3000:]  # One job, the chief's result on both tasks.
  assert "instrumented hparams_object.py" in output, output[-3000:]


@pytest.mark.processes
def test_hyperparameters_as_an_object_and_train_and_evaluates_result_on_every_task(tmp_path):
  """tests/programs/hparams_object.py under multi_worker, as TensorFlow's cifar10_estimator
  and canned-Estimator examples are written: params an argparse.Namespace read as
  attributes (once `'Namespace' object is not a mapping` inside the toolkit), and
  `eval_result, _ = tf.estimator.train_and_evaluate(...)` printed on every task (once
  None on the worker: `argument after ** must be a mapping`)."""
  code, output = helpers.launch("multi_worker", "tests.programs.hparams_object",
                                f"--model_dir={tmp_path}", "--train_steps=40", timeout=300)
  assert code == 0, output[-3000:]
  printed = {task: [line.split("] ", 1)[1] for line in output.splitlines()
                    if line.startswith(f"[{task}] Test set accuracy: ")]
             for task in ("chief:0", "worker:0")}
  assert len(printed["chief:0"]) == 1 and printed["worker:0"] == printed["chief:0"], printed
  assert printed["chief:0"][0].endswith(" at step 40"), printed
  # The rate was found in the program's optimizer and scaled for two replicas.
  assert "learning rate" in output and "x 2" in output, output[-3000:]


@pytest.mark.processes
def test_a_model_dir_the_program_made_in_its_temporary_directory_is_kept():
  """tests/programs/hparams_object.py --fresh: its chief trains in its own
  tempfile.mkdtemp(), inside the job's TMPDIR, which the launcher removes with the job.
  Once the job exited 0 with every checkpoint gone; now they are moved to the job's
  model_dir and resume from there."""
  code, output = helpers.launch("local", "tests.programs.hparams_object", "--train_steps=30",
                                "--fresh", num_workers=1, timeout=240)
  assert code == 0, output[-3000:]
  made = re.search(r"model_dir=(\S+) \(a new temporary directory\)", output).group(1)
  own = re.search(r"trained in a temporary directory of its own, (\S+) \(the chief's\), "
                  r"which goes with the job: its checkpoints, evaluations and exports were "
                  r"moved to (\S+)\n", output)
  assert own and own.group(2) == made and not os.path.exists(own.group(1)), output[-3000:]
  try:
    assert re.search(rf"summary\n(.*\n)*  model_dir +{re.escape(made)}\n", output), output[-2000:]
    assert tf.train.latest_checkpoint(made) == os.path.join(made, "model.ckpt-30")
    assert os.listdir(os.path.join(made, "eval")), os.listdir(made)
  finally:
    shutil.rmtree(made, ignore_errors=True)


@pytest.mark.processes
def test_tensorflows_keras_model_to_estimator_tutorial_trains_unchanged_under_parameter_server(
    tmp_path):
  """Its model_to_estimator(model_dir=tempfile.mkdtemp()) on every task, train(steps=500)
  and evaluate(steps=10): one asynchronous training in the chief's model_dir (the job's),
  one evaluation every training task prints, the ps serving alone (it runs nothing of
  the program), and no task's own temporary directory left."""
  code, output = helpers.launch("parameter_server", KERAS, timeout=300,
                                launch_args=[f"--model_dir={tmp_path}"])
  assert code == 0, output[-3000:]
  assert f"instrumenting {launching.program_file([sys.executable, '-m', KERAS])}" in output
  tasks = ("chief:0", "worker:0")
  for task in tasks:
    assert (f"[{task}] estimator-dist: instrumented keras_model_to_estimator.py: its "
            f"Estimators train, evaluate and export under the job's parameter_server "
            f"strategy") in output, output[-3000:]
  assert ("[ps:0] estimator-dist: instrumented keras_model_to_estimator.py: ps:0 serves "
          "the job's variables and runs nothing of the program") in output, output[-3000:]
  summary, = helpers.summaries(output)
  steps, loss = int(summary["steps"]), float(summary["eval_loss"])
  # Asynchronous: the worker may land a step or two after the chief's last (see
  # equivalence_test). Chance is ln(3) for three classes.
  assert 500 <= steps <= 502 and math.isfinite(loss) and loss < math.log(3), summary
  printed = {task: [ast.literal_eval(line.split("Eval result: ", 1)[1])
                    for line in output.splitlines()
                    if line.startswith(f"[{task}] Eval result: ")] for task in tasks}
  evaluation, = printed["chief:0"]
  assert printed["worker:0"] == [evaluation], printed
  assert evaluation["global_step"] == steps, evaluation
  assert f"{evaluation['loss']:.4f}" == summary["eval_loss"], (evaluation, summary)
  assert list(event_files.eval_metrics(str(tmp_path))) == [steps]  # Evaluated once.
  newest = f'model_checkpoint_path: "{tmp_path / f"model.ckpt-{steps}"}"'
  assert newest in (tmp_path / "checkpoint").read_text()  # The job's model_dir, the chief's.
  # Each task's Estimator first had its own mkdtemp(): the job's TMPDIR, gone with the job.
  own = set(re.findall(r"'_model_dir': '([^']+)'", output)) - {str(tmp_path)}
  assert len(own) == len(tasks) and not any(map(os.path.exists, own)), own


@pytest.mark.processes
def test_a_program_that_runs_horovod_itself_trains_under_horovod_alone(tmp_path):
  """Horovod's Estimator example: its own DistributedOptimizer and broadcast, a rate it
  scaled itself, steps divided by hvd.size(), a model_dir on rank 0 alone (relative: the
  job runs where it was started), its evaluation printed by every rank."""
  run = functools.partial(helpers.run, cwd=str(tmp_path), timeout=300)
  code, output = run(helpers.launch_command("--strategy=horovod", "--num_workers=2",
                                            program=(sys.executable, "-m", HOROVOD_EXAMPLE)))
  assert code == 0, output[-3000:]
  assert ("learning rate of the MomentumOptimizer in the model_fn's own Horovod "
          "DistributedOptimizer left as it is, not scaled again" in output), output[-3000:]
  summary, = helpers.summaries(output)
  # The program's STEPS // hvd.size(): 100 // 2.
  assert summary["steps"] == "50" and float(summary["eval_accuracy"]) >= 0.5, summary
  printed = {task: [ast.literal_eval(line.split("] ", 1)[1]) for line in output.splitlines()
                    if line.startswith(f"[{task}] {{'accuracy': ")]
             for task in ("worker:0", "worker:1")}  # Each rank's print(eval_results).
  evaluation, = printed["worker:0"]
  assert printed["worker:1"] == [evaluation], printed  # The chief's evaluation, on both.
  assert evaluation["global_step"] == 50, evaluation
  assert f"{evaluation['accuracy']:.4f}" == summary["eval_accuracy"], (evaluation, summary)
  assert (tmp_path / "mnist_convnet_model" / "checkpoint").exists()  # Rank 0's model_dir.
  code, output = run(helpers.launch_command("--strategy=multi_worker", "--num_workers=2",
                                            program=(sys.executable, "-m", HOROVOD_EXAMPLE)))
  assert code == 2, output[-3000:]
  assert ("estimator-dist: error: the program starts Horovod itself (hvd.init()), which "
          "under --strategy=multi_worker gives every task hvd.size() 1 and rank 0: run it "
          "with --strategy=horovod." in output), output[-3000:]


@pytest.fixture
def tutorial_model_dir():
  """The model_dir TensorFlow's multi-worker tutorial names, /tmp/multiworker: none there
  before the test, and none left after it."""
  path = "/tmp/multiworker"
  shutil.rmtree(path, ignore_errors=True)
  yield path
  shutil.rmtree(path, ignore_errors=True)


@pytest.mark.processes
def test_tensorflows_multi_worker_tutorial_trains_one_pass_under_another_strategy(
    tutorial_model_dir):
  """Its own MultiWorkerMirroredStrategy in RunConfig, its own sharding by input_context,
  a TrainSpec without max_steps and its own model_dir, under --strategy=mirrored (two
  replicas in one process, the cheapest synchronous job): the job's strategy stands in
  for its own, one pass over the data is 1437 digits in batches of 64, 23 batches, 11 steps
  of two, and the launcher follows the program to its model_dir."""
  code, output = helpers.launch("mirrored", TUTORIAL, timeout=300)
  assert code == 0, output[-3000:]
  assert ("the RunConfig's train_distribute (CollectiveAllReduceStrategy) is replaced by "
          "the mirrored strategy's" in output), output[-3000:]
  assert "one pass over the input is 11 steps (the smallest worker's share; batches per " \
         "worker [23])" in output, output[-3000:]
  assert (f"the program trained in its own model_dir, {tutorial_model_dir} (the chief's)"
          in output), output[-3000:]
  summary, = helpers.summaries(output)
  assert summary["steps"] == "11", summary
  assert os.path.exists(os.path.join(tutorial_model_dir, "model.ckpt-11.index"))
  losses = {step: metrics["loss"]
            for step, metrics in event_files.eval_metrics(tutorial_model_dir).items()}
  # The final evaluation, and the first checkpoint's where the evaluation beside training
  # (which looks every 0.5 s for the newest) came before the last: it learns, slowly.
  assert max(losses) == 11 and set(losses) <= {0, 11}, losses
  assert 0 not in losses or losses[11] < losses[0], losses


@pytest.mark.processes
def test_verify_finds_horovod_on_tensorflows_premade_tutorial_equal_to_one_worker():
  """The program as written, up to its classifier.train(): its DNNClassifier and its
  input_fn, 10 steps on two Horovod ranks against one worker on their batches joined."""
  code, output = helpers.run([sys.executable, "-m", "estimator_dist.cli", "verify",
                              "--strategy=horovod", "--num_workers=2", "--lr_scaling=none",
                              "--", sys.executable, "-m", PREMADE], timeout=300)
  assert code == 0, output[-3000:]
  assert (f"-m {PREMADE}, 10 steps at global batch 2 x its, horovod on 2 worker(s) against "
          f"one worker") in output, output[-3000:]
  weights = re.findall(r"^  (dnn/\S+) ", output, re.MULTILINE)
  assert len(weights) == 6, output[-3000:]  # Two hidden layers and the logits.
  assert re.search(r"max relative difference \S+ <= tolerance 1e-05: PASS", output)
