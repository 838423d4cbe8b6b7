"""Evaluation cannot lie or hang, and the work after training ends, through the real
launcher with 2 workers."""

import json
import os
import re
import types

import pytest
import tensorflow as tf

from estimator_dist.outputs import best_checkpoints
from estimator_dist.outputs import event_files
from estimator_dist.task import best_checkpoint_keeper
from tests import helpers

PROGRAM = "tests.programs.after_training"


@pytest.mark.processes
def test_an_eval_input_of_no_example_fails_the_job_and_reports_no_metrics(tmp_path):
  code, output = helpers.launch("multi_worker", PROGRAM, f"--model_dir={tmp_path}",
                                "--train_steps=50", "--eval_input=empty")
  assert code == 2, output
  assert ("error: the eval_input_fn input_fn gives no example, so its evaluation would "
          "report zeros as metrics" in output), output
  assert "eval_accuracy" not in output and not helpers.summaries(output), output
  assert not (tmp_path / "eval").exists() or not list((tmp_path / "eval").iterdir())


@pytest.mark.processes
def test_an_evaluation_that_never_ends_is_stopped_naming_the_cause(tmp_path):
  code, output = helpers.launch("multi_worker", PROGRAM, f"--model_dir={tmp_path}",
                                "--train_steps=50", "--eval_input=endless",
                                "--eval_timeout_secs=5")
  assert code == 124, output
  assert ("past its timeout of 5 s (--eval_timeout_secs); probable cause: an eval input "
          "that repeats for ever: set eval_steps or remove repeat() from input_fn" in output), output
  assert "eval_accuracy" not in output, output


@pytest.mark.processes
def test_work_after_training_runs_and_a_task_waiting_for_an_exited_one_is_stopped(tmp_path):
  # The eval input is a functools.partial of an input_fn with a defaulted argument, as
  # TensorFlow's cifar10_estimator tutorial passes it. After training the chief exports,
  # predicts and evaluates again with its own Estimator, whose variables are on ps:0, and
  # runs an op there: the ps serves until the chief's program ends. Then it waits on
  # worker:0, which has exited: before, such a job waited until it was killed from outside.
  code, output = helpers.launch("parameter_server", PROGRAM, f"--model_dir={tmp_path}",
                                "--train_steps=200", "--then_wait_for_worker",
                                launch_args=("--num_ps=1", "--hang_timeout_secs=10"),
                                timeout=180)
  line = next((l for l in output.splitlines() if "after training: exported" in l), output)
  assert f"exported {tmp_path}/serving/" in line and "predicted 50" in line, line
  assert "evaluated again at step" in line, line
  assert list((tmp_path / "serving").glob("*/saved_model.pb")), line
  assert "[chief:0] after training: ran an op on ps:0" in output, output[-3000:]
  assert "all training tasks finished" not in output, output[-3000:]  # Still serving.
  assert code == 124, output
  assert ("chief:0 ended its training and has made no progress since, for 10s (it used no "
          "CPU: it waits for something" in output), output


@pytest.mark.processes
def test_the_best_checkpoint_is_kept_after_estimator_deleted_it(tmp_path):
  # Loss maximized peaks at the first evaluation; Estimator keeps only the newest checkpoint.
  program = [helpers.PYTHON, "-m", "tests.programs.plain_model", f"--model_dir={tmp_path}",
             "--step_secs=0.01", "--save_checkpoints_steps=50", "--keep_checkpoint_max=1",
             "--eval_throttle_secs=0", "--keep_best_checkpoints=1", "--best_metric=loss"]
  code, output = helpers.run([*program, "--train_steps=400", "--best_direction=maximize"],
                             timeout=300)
  assert code == 0, output[-3000:]
  evaluated = event_files.eval_metrics(str(tmp_path))
  peak = max(evaluated, key=lambda step: evaluated[step]["loss"])
  assert len(evaluated) >= 3 and peak < 400, evaluated
  best = tmp_path / "best"
  (record,) = [json.loads(p.read_text()) for p in best.glob("*.json")]
  assert (record["step"], record["metric"], record["direction"]) == (peak, "loss", "maximize")
  assert abs(record["value"] - evaluated[peak]["loss"]) < 1e-6, (record, evaluated[peak])
  assert not (tmp_path / f"model.ckpt-{peak}.index").exists()  # Estimator deleted it.
  kept = tf.train.latest_checkpoint(str(best))
  assert kept == str(best / f"model.ckpt-{peak}"), kept
  assert tf.train.load_checkpoint(kept).get_tensor("global_step") == peak
  assert sorted(os.listdir(best)) == sorted(["checkpoint", *(f"model.ckpt-{peak}.{suffix}" for
                                             suffix in ("index", "json", "meta",
                                                        "data-00000-of-00001"))])
  # What a keeper killed in the middle leaves goes when the job runs again.
  (best / ".evaluating").mkdir()
  for leftover in ("model.ckpt-7.index", "model.ckpt-7.meta.tmp", ".evaluating/x"):
    (best / leftover).write_text("")
  code, output = helpers.run([*program, "--train_steps=450", "--best_direction=maximize"],
                             timeout=300)
  assert code == 0, output[-3000:]
  assert not {".evaluating", "model.ckpt-7.index", "model.ckpt-7.meta.tmp"} & set(
      os.listdir(best))
  assert tf.train.latest_checkpoint(str(best)) == kept  # Still the peak.
  # Run again ranking by another metric: refused before training, nothing lost.
  code, output = helpers.run([*program, "--train_steps=500", "--best_direction=minimize"],
                             timeout=300)
  assert code == 2, output[-3000:]
  assert (f"{best} keeps the best checkpoints by loss (maximize), not by loss (minimize): "
          f"give --best_metric=loss --best_direction=maximize, or move that directory "
          f"away." in output), output[-3000:]
  assert tf.train.latest_checkpoint(str(best)) == kept


def test_a_checkpoint_evaluated_before_its_meta_was_written_is_kept_whole(tmp_path,
                                                                         monkeypatch):
  # A Saver names a checkpoint, then writes its .meta (to a temporary name it renames):
  # the evaluation may start in between, and Estimator (keep_checkpoint_max) may delete
  # the checkpoint before the keeper copies it.
  checkpoint = str(tmp_path / "model.ckpt-0")
  tf.train.Checkpoint(v=tf.Variable(1.0)).write(checkpoint)
  writing = tmp_path / "model.ckpt-0.meta.tmp5f1e"
  writing.write_text("meta")
  waits = []
  monkeypatch.setattr(best_checkpoint_keeper.time, "sleep",
                      lambda secs: waits.append(writing.rename(checkpoint + ".meta")))
  with best_checkpoint_keeper.pinned(checkpoint, str(tmp_path)) as readable:
    for name in tmp_path.glob("model.ckpt-0.*"):
      name.unlink()  # Training saved a newer one.
    keeper = best_checkpoint_keeper.Keeper(best_checkpoints.BestCheckpoints(keep=1))
    kept = keeper.export(types.SimpleNamespace(model_dir=str(tmp_path)), None, readable,
                         {"global_step": 0, "loss": 0.5}, False)
  assert len(waits) == 1 and kept == str(tmp_path / "best" / "model.ckpt-0"), (waits, kept)
  assert (tmp_path / "best" / "model.ckpt-0.meta").read_text() == "meta"
  assert sorted(os.listdir(tmp_path / "best")) == sorted([
      "checkpoint", *(f"model.ckpt-0.{suffix}" for suffix in (
          "index", "json", "meta", "data-00000-of-00001"))])


@pytest.mark.processes
def test_a_misspelt_best_metric_stops_every_task_at_the_first_evaluation(tmp_path):
  # It logged the error at step 0, trained every step, then exited 2.
  code, output = helpers.launch(
      "multi_worker", "tests.programs.plain_model", f"--model_dir={tmp_path}",
      "--train_steps=3000", "--step_secs=0.01", "--save_checkpoints_steps=100",
      "--eval_throttle_secs=0", "--keep_best_checkpoints=2", "--best_metric=acuracy",
      "--best_direction=maximize", timeout=180)
  assert code == 2, output[-3000:]
  said = ("estimator-dist: error: keeping the best checkpoints by eval metric 'acuracy', but "
          "the model's evaluations report only ['accuracy', 'loss']: give one of them as "
          "--best_metric "
          "(--best_metric=accuracy?).")
  assert f"\n[chief:0] {said}\n" in output, output[-3000:]
  evaluated = event_files.eval_metrics(str(tmp_path))
  reached = int(tf.train.latest_checkpoint(str(tmp_path)).rsplit("-", 1)[1])
  assert list(evaluated) == [0] and reached < 3000, (evaluated, reached)
  # The worker stopped too, none waits: at the step all agreed on, or, when the chief's
  # exit came first, by the launcher.
  worker = re.findall(r"^\[worker:0\] steps_run=(\d+)$", output, re.M)
  assert ([int(steps) < 3000 for steps in worker] == [True] or not worker and
          "launch: chief:0 exited with code 2; stopping the other tasks\n" in output), (
              output[-3000:])
