"""Sweeps: the space, the options, the study and the report (no process), and real sweeps
whose trials are jobs of the launcher (processes)."""

import itertools
import json
import os
import random
import re
import signal
import sqlite3
import time
import types
import warnings

import numpy as np
import optuna
import psutil
import pytest
import tensorflow as tf
from absl import flags
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorflow_estimator.python.estimator.early_stopping import read_eval_metrics

from estimator_dist import errors
from estimator_dist import sweep_cli
from estimator_dist.experiments import pbt
from estimator_dist.experiments import pbt_plan
from estimator_dist.experiments import pbt_values
from estimator_dist.experiments import pruners
from estimator_dist.experiments import results
from estimator_dist.experiments import runner
from estimator_dist.experiments import slot_shares
from estimator_dist.experiments import space
from estimator_dist.experiments import storage as storage_lib
from estimator_dist.experiments import study as study_lib
from estimator_dist.experiments import sweep_progress
from estimator_dist.experiments import trial_job
from estimator_dist.outputs import event_files
from estimator_dist.supervision import failure_cause
from estimator_dist.supervision import shown_output
from model_zoo import data as model_zoo_data
from tests import helpers
from tests import postgres_server

DNN = [helpers.PYTHON, "-m", "model_zoo.mnist_dnn", "--save_checkpoints_steps=100",
       "--eval_throttle_secs=0"]


def _options(tmp_path, **fields):
  return study_lib.SweepOptions(**{"space": "learning_rate=choice(0.01,0.1)",
                                   "sweep_dir": str(tmp_path), **fields})


def test_the_space_is_read_into_optuna_distributions():
  parsed = space.parse("lr=loguniform(1e-4,1e-1) dropout=uniform(0,0.5) units=int(8,64) "
                       "layers=logint(1,8) optimizer=choice(adam, sgd) batch=choice( 16,32 )")
  assert parsed["lr"] == optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True)
  assert parsed["dropout"] == optuna.distributions.FloatDistribution(0, 0.5)
  assert parsed["units"] == optuna.distributions.IntDistribution(8, 64)
  assert parsed["layers"] == optuna.distributions.IntDistribution(1, 8, log=True)
  assert parsed["optimizer"].choices == ("adam", "sgd")
  assert parsed["batch"].choices == (16, 32)
  assert space.as_flags({"lr": 0.003, "optimizer": "adam"}) == ["--lr=0.003",
                                                                "--optimizer=adam"]


@pytest.mark.parametrize("text, message", [
    ("learning_rate", r"is not NAME=KIND\(ARGS\)"),
    ("lr=uniform(0,1", r"'lr=uniform\(0,1' is not NAME=KIND\(ARGS\)"),
    ("lr=normal(0,1)", "unknown distribution 'normal'"),
    ("lr=loguniform(0,1)", "low > 0"),
    ("lr=uniform(1,0)", "low <= high"),
    ("lr=uniform(1)", "uniform takes two numbers"),
    ("units=int(1.5,4)", "int takes two integers"),
    ("lr=choice()", "at least one value"),
    ("lr=choice(1,1)", "given twice"),
    ("lr=choice(1) lr=choice(2)", "names 'lr' twice"),
    ("", "--space is empty"),
])
def test_a_malformed_space_names_the_entry_and_the_fix(text, message):
  with pytest.raises(errors.ConfigError, match=message):
    space.parse(text)


def test_grid_and_zip_take_choice_lists(tmp_path):
  options = _options(tmp_path, space="a=choice(1,2) b=choice(x,y,z)", sampler="grid",
                     trials=10)
  assert options.trial_count == 6
  assert len({tuple(sorted(p.items())) for p in study_lib.points(options)}) == 6
  fewer = _options(tmp_path, space="a=choice(1,2) b=choice(x,y,z)", sampler="grid", trials=4)
  assert len(study_lib.points(fewer)) == 4
  zipped = _options(tmp_path, space="a=choice(1,2) b=choice(x,y)", zip=True)
  assert study_lib.points(zipped) == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
  with pytest.raises(errors.ConfigError, match="b is a range"):
    _options(tmp_path, space="a=choice(1,2) b=uniform(0,1)", sampler="grid")
  with pytest.raises(errors.ConfigError, match="lengths are"):
    _options(tmp_path, space="a=choice(1,2) b=choice(x,y,z)", zip=True)


def test_bad_options_are_refused_before_any_trial(tmp_path):
  with pytest.raises(errors.ConfigError, match="sampler"):
    _options(tmp_path, sampler="bayes")
  with pytest.raises(errors.ConfigError, match=r"--parallel=64 is more than the \d+ CPUs"):
    slot_shares.cpu_shares(64)
  with pytest.raises(errors.ConfigError, match="remove --model_dir"):
    runner.check_program([*DNN, "--model_dir=/tmp/x"], _options(tmp_path))
  with pytest.raises(errors.ConfigError, match="num_workers=1"):
    runner.check_program(DNN, _options(tmp_path, workers_per_trial=2))
  with pytest.raises(errors.ConfigError, match="cannot be opened"):
    study_lib.open_study(_options(tmp_path, storage="sqlite:////no/such/dir/study.db"),
                         create=True)
  # A first rung at or past the last step would prune nothing; below it, or where the
  # program's default or the space decides the last step, the sweep runs.
  hyperband = _options(tmp_path, pruner="hyperband", min_resource_steps=200)
  with pytest.raises(errors.ConfigError, match=(
      r"^--min_resource_steps=200 puts the first rung of --pruner=hyperband at or past the "
      r"last step of the trials \(the program's --train_steps=200\), .* \(e\.g\. "
      r"--min_resource_steps=66\), or more --train_steps\.$")):
    runner.check_program([*DNN, "--train_steps", "200"], hyperband)
  runner.check_program([*DNN, "--train_steps=201"], hyperband)
  runner.check_program(DNN, hyperband)
  runner.check_program([*DNN, "--train_steps=100"], _options(
      tmp_path, space="train_steps=choice(100,400)", pruner="asha", min_resource_steps=200))


def test_parallel_trials_get_disjoint_cpus():
  shares = slot_shares.cpu_shares(len(os.sched_getaffinity(0)))
  assert all(len(s) == 1 for s in shares) and len(set().union(*shares)) == len(shares)


def test_parallel_trials_get_disjoint_gpus_by_index():
  assert slot_shares.visible_gpus({"CUDA_VISIBLE_DEVICES": "0,1,3,4,5"}) == [
      "0", "1", "3", "4", "5"]
  assert slot_shares.visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
  assert slot_shares.gpu_shares(2, ["0", "1", "3", "4", "5"]) == [["0", "1"], ["3", "4"]]
  assert slot_shares.gpu_shares(2, []) == [[], []]
  with pytest.raises(errors.ConfigError, match=r"--parallel=3 is more than the 2 GPUs here "
                     r"\(0,1\); .* --parallel=2 or fewer"):
    slot_shares.gpu_shares(3, ["0", "1"])
  slot = trial_job.LocalSlot(cpus={0}, gpus=["3", "4"], options=None)
  assert str(slot) == "CPUs [0], GPUs 3,4"


def test_a_sweep_run_again_must_search_what_it_searched(tmp_path):
  study_lib.open_study(_options(tmp_path), create=True)
  study_lib.open_study(_options(tmp_path, parallel=2, trials=20), create=True)  # May change.
  with pytest.raises(errors.ConfigError, match="ran with --space='learning_rate=choice"):
    study_lib.open_study(_options(tmp_path, space="learning_rate=choice(0.5)"), create=True)
  assert study_lib.stored_options(str(tmp_path)).space == "learning_rate=choice(0.01,0.1)"


def _hparams_values(logdir):
  """{name: value} of the HParams session summary written in logdir."""
  for name in os.listdir(logdir):
    if name.endswith(".hparams"):
      for event in tf.compat.v1.train.summary_iterator(os.path.join(logdir, name)):
        for value in event.summary.value:
          if value.metadata.plugin_data.plugin_name == "hparams":
            data = plugin_data_pb2.HParamsPluginData.FromString(
                value.metadata.plugin_data.content)
            if data.HasField("session_start_info"):
              return {k: v.number_value or v.string_value
                      for k, v in data.session_start_info.hparams.items()}
            if data.HasField("experiment"):
              return {h.name: None for h in data.experiment.hparam_infos}
  return None


def test_the_report_has_the_table_the_data_the_charts_and_hparams(tmp_path):
  options = _options(tmp_path, space="learning_rate=loguniform(1e-3,1e-1) opt=choice(a,b)")
  study = study_lib.open_study(options, create=True)
  for number, (rate, opt, value) in enumerate([(0.01, "a", 0.9), (0.05, "b", 0.95)]):
    model_dir = tmp_path / f"trial_{number}"
    model_dir.mkdir()
    study.add_trial(optuna.create_trial(
        params={"learning_rate": rate, "opt": opt}, distributions=options.search_space,
        value=value, user_attrs={"model_dir": str(model_dir), "steps": 300, "seconds": 9.5}))
  # Trial 1's job kept its best checkpoints (--keep_best_checkpoints=2): these records.
  kept = tmp_path / "trial_1" / "best"
  kept.mkdir()
  for step, value in ((200, 0.95), (300, 0.94)):
    (kept / f"model.ckpt-{step}.json").write_text(json.dumps(
        {"step": step, "metric": "accuracy", "value": value, "direction": "maximize",
         "metrics": {"accuracy": value}, "checkpoint": f"model.ckpt-{step}"}))
  data = results.summarize(study, options=options)
  assert data["best"]["params"] == {"learning_rate": 0.05, "opt": "b"}
  assert [row["best_checkpoint"] for row in data["trials"]] == [None,
                                                                 str(kept / "model.ckpt-200")]
  with open(tmp_path / "sweep.json") as f:
    assert json.load(f)["trials"][0]["state"] == "complete"
  report = (tmp_path / "report.md").read_text()
  assert "| trial | learning_rate | opt | accuracy | state | steps | seconds |" in report
  assert "| 1 | 0.05 | b | 0.9500 | complete | 300 | 9.5 |" in report
  assert "--learning_rate=0.05 --opt=b" in report
  assert f"Best checkpoint of each trial (--keep_best_checkpoints):\n- trial 1: {kept}/model.ckpt-200\n" in report
  for name in results.CHARTS:
    assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert _hparams_values(tmp_path) == {"learning_rate": None, "opt": None}
  assert _hparams_values(tmp_path / "trial_1") == {"learning_rate": 0.05, "opt": "b"}
  results.summarize(study, options=options)  # Again: still one summary a run.
  assert len([n for n in os.listdir(tmp_path / "trial_1") if n.endswith(".hparams")]) == 1


def _run_first(study, options, *, failing):
  """As a first run of `study`'s sweep: its queued trials in turn, the `failing`-th one
  failed as a job that exits 2 (it stops the sweep), the others complete; the rest wait."""
  for number in range(failing + 1):
    trial = study_lib.ask(study, options)
    if number < failing:
      study.tell(trial, 0.9)
  trial.set_user_attr("failure", f"trial {trial.number} failed (exit code 2): ...")
  study.tell(trial, state=optuna.trial.TrialState.FAIL)
  return trial


def test_a_grid_run_again_queues_each_failed_point_once_and_asks_the_sampler_nothing(
    tmp_path):
  options = _options(tmp_path, space="learning_rate=choice(0.05,0.1) batch_size=choice(16,32)",
                     sampler="grid")
  study = study_lib.open_study(options, create=True)
  failed = _run_first(study, options, failing=1)
  assert failed.params == {"learning_rate": 0.05, "batch_size": 32}
  for _ in range(2):  # Run again, twice: the failed point is queued once.
    study = study_lib.open_study(options, create=True)
  queued = [t.system_attrs["fixed_params"] for t in study.trials
            if t.state == optuna.trial.TrialState.WAITING]
  assert queued == [{"learning_rate": 0.1, "batch_size": 16},
                    {"learning_rate": 0.1, "batch_size": 32}, failed.params]
  while study_lib.wants_trial(study, options):  # As the runner takes and runs them.
    trial = study_lib.ask(study, options)
    assert not study_lib.surplus(study, trial, options)
    study.tell(trial, 0.8)
  assert study_lib.over(study, options)
  complete = sorted(tuple(sorted(t.params.items())) for t in study.trials
                    if t.state == optuna.trial.TrialState.COMPLETE)
  assert complete == sorted(set(complete)) and len(complete) == 4, complete
  assert results.summarize(study, options=options)["failed"] == []
  # Runners that queued a point again at the same moment run it once; values the
  # sampler made (another runner took the last queued point) run never.
  study.enqueue_trial(failed.params)
  study.enqueue_trial(failed.params)
  assert study_lib.surplus(study, study_lib.ask(study, options), options)
  assert study_lib.surplus(study, study_lib.ask(study, options), options)
  assert study_lib.surplus(study, study_lib.ask(study, options), options)
  with pytest.raises(errors.ConfigError, match=r"runs 4 points of its grid; --trials=3 "
                     r"asks for 3. Run it again with --trials=4"):
    study_lib.open_study(_options(tmp_path, space=options.space, sampler="grid", trials=3),
                         create=True)


def test_with_noretry_failed_a_failed_point_is_reported_and_the_sweep_fails(tmp_path,
                                                                            capsys):
  space_text = "learning_rate=choice(0.05,0.1) batch_size=choice(16,32)"
  options = _options(tmp_path, space=space_text, sampler="grid")
  study = study_lib.open_study(options, create=True)
  failed = _run_first(study, options, failing=1)
  for _ in range(2):  # Another runner finished the rest.
    study.tell(study_lib.ask(study, options), 0.8)
  flag_values = flags.FlagValues()
  sweep_flags = sweep_cli.define_flags(flag_values)
  argv = flag_values(["sweep", f"--sweep_dir={tmp_path}", f"--space={space_text}",
                      "--sampler=grid", "--noretry_failed", "--", *DNN])
  assert sweep_cli.main(argv, sweep_flags) == 1
  message = capsys.readouterr().err
  assert message == ("estimator-dist sweep: error: 1 point(s) failed and were not run again: "
                     "trial 1 --batch_size=32 --learning_rate=0.05; the report lists them; "
                     "run the sweep again without --noretry_failed to retry them.\n")
  assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE,
                                             optuna.trial.TrialState.FAIL,
                                             *[optuna.trial.TrialState.COMPLETE] * 2]
  (row,) = json.loads((tmp_path / "sweep.json").read_text())["failed"]
  assert row["number"] == failed.number and row["params"] == failed.params
  report = (tmp_path / "report.md").read_text()
  assert "Failed points" in report and "- trial 1 failed (exit code 2): ..." in report


_MNIST_STYLE_LOG = """\
estimator-dist launch: strategy=multi_worker workers=2 model_dir=/tmp/sweep/trial_1
[chief:0] 2024-11-24 00:19:31.101622: E external/local_xla/xla/stream_executor/cuda/\
cuda_fft.cc:477] Unable to register cuFFT factory: Attempting to register factory for \
plugin cuFFT when one has already been registered
[chief:0] I1124 00:19:34.355854 140513112556096 placement.py:42] estimator-dist: training \
process 0 of 2 on this host runs on CPUs [0]
[chief:0] Traceback (most recent call last):
[worker:0] I1124 00:19:35.101010 139729832161856 basic_session_run_hooks.py:262] loss = \
2.31, step = 0
[chief:0]   File "/work/main/model_zoo/mnist_dnn.py", line 36, in <module>
[chief:0]     ed.run_program(main)
[chief:0]   File "/work/main/model_zoo/mnist_dnn.py", line 20, in logits
[chief:0]     raise ValueError("hidden_units must be positive, got 0")
[chief:0] ValueError: hidden_units must be positive, got 0
[worker:0] E1124 00:19:36.200000 139729832161856 coordinator.py:219] Collective ops \
failed: UnavailableError: Socket closed
estimator-dist launch: chief:0 exited with code 1; stopping the other tasks
[worker:0] I1124 00:19:36.500000 139729832161856 monitored_session.py:1042] Finalize.
estimator-dist launch: job failed with exit code 1
"""

_CHAINED_LOG = """\
Traceback (most recent call last):
  File "train.py", line 3, in load
    return np.load(path)
FileNotFoundError: [Errno 2] No such file or directory: 'x.npz'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "train.py", line 9, in <module>
    load()
RuntimeError: the data could not be read
INFO:tensorflow:Finalize.
"""


@pytest.mark.parametrize("log, line", [
    (_MNIST_STYLE_LOG, "[chief:0] ValueError: hidden_units must be positive, got 0"),
    (_CHAINED_LOG, "RuntimeError: the data could not be read"),
    # A configuration error, as our programs print it, after TensorFlow's harmless ERROR.
    ("[worker:0] 2024-11-24 00:19:31.101622: E external/cuda_fft.cc:477] Unable to "
     "register cuFFT factory\n"
     "[worker:0] I1124 00:19:34.4 1397 training.py:12] eval: error = 0.02\n"
     "[worker:0] estimator-dist: error: --data_path=x.npz is not a Keras-format MNIST .npz\n"
     "estimator-dist launch: job failed with exit code 2\n",
     "[worker:0] estimator-dist: error: --data_path=x.npz is not a Keras-format MNIST .npz"),
    ("I1124 00:19:34.4 1397 training.py:12] step 100\n"
     "E0000 00:00:1732404000.123456   1397 session.cc:88] Collective ops failed\n"
     "W1124 00:19:35.0 1397 training.py:12] fatal: not a warning's cause\n",
     "E0000 00:00:1732404000.123456   1397 session.cc:88] Collective ops failed"),
    ("[worker:0] I1124 00:19:34.4 1397 training.py:12] step 100\n"
     "estimator-dist launch: worker:0 exited with code -9; stopping the other tasks\n"
     "estimator-dist launch: job failed with exit code -9\n",
     "estimator-dist launch: job failed with exit code -9"),
    ("I1124 00:19:34.4 1397 training.py:12] step 100\n", None),
])
def test_the_first_error_line_of_a_log_says_why_never_an_info_line(log, line):
  assert failure_cause.first_error_line(log) == line


# Real sweeps: each trial is a job of the launcher.


def _sweep(sweep_dir, *flags, program=DNN, timeout=400):
  return helpers.run([helpers.PYTHON, "-m", "estimator_dist.cli", "sweep",
                      f"--sweep_dir={sweep_dir}", *flags, "--", *program], timeout=timeout)


def _trials(sweep_dir):
  with open(os.path.join(sweep_dir, "sweep.json")) as f:
    return json.load(f)["trials"]


def test_the_median_pruner_compares_trials_whose_evaluations_fell_on_other_steps(tmp_path):
  """--pruner=median's, built from the sweep's flags. (A pruned trial stopping on every
  worker is the pruners' common part: one real sweep, under asha, shows it.)"""
  options = _options(tmp_path, pruner="median", prune_after_trials=1, prune_after_steps=1)
  study = optuna.create_study(direction="maximize", pruner=pruners.of(options))
  study.add_trial(optuna.trial.create_trial(
      value=0.99, intermediate_values={0: 0.1, 200: 0.96, 400: 0.97, 600: 0.99}))
  trial = study.ask()
  trial.report(0.19, 100)  # Above the finished trial at step 0, where it had reached.
  assert not trial.should_prune()
  trial.report(0.38, 300)  # Below it at 200; Optuna's MedianPruner finds no step 300.
  assert trial.should_prune()
  assert not optuna.pruners.MedianPruner(n_startup_trials=1, n_warmup_steps=1).prune(
      study, study.trials[-1])


def test_asha_prunes_at_its_rungs_from_the_second_trial_and_its_flags_are_checked(tmp_path):
  options = _options(tmp_path, pruner="asha", min_resource_steps=100, reduction_factor=2)
  study = optuna.create_study(direction="maximize", pruner=pruners.of(options))
  first = study.ask()  # Still running: a rung does not wait for a trial to finish.
  for step, value in ((0, 0.1), (150, 0.9), (350, 0.95)):
    first.report(value, step)
    assert not first.should_prune()  # Alone at rungs 100 and 200: promoted.
  second = study.ask()
  second.report(0.3, 120)  # Rung 100, where the evaluation fell past it.
  assert second.should_prune()  # Not in the top 1/2 of the two trials there.
  third = study.ask()
  third.report(0.92, 110)
  assert not third.should_prune()  # The best of the three at rung 100.
  for bad in (dict(pruner="median", reduction_factor=3), dict(pruner="asha",
                                                               reduction_factor=1)):
    with pytest.raises(errors.ConfigError, match="reduction_factor"):
      _options(tmp_path, **bad)


def test_pbt_perturbs_within_the_bounds_and_refuses_what_it_cannot_run(tmp_path):
  space_ = space.parse("lr=loguniform(1e-3,1e-1) units=int(8,64) opt=choice(sgd,adam,rms)")
  rng = random.Random(0)
  moved = [pbt_values.perturbed({"lr": 0.1, "units": 8, "opt": "sgd"}, space_, rng)
           for _ in range(20)]
  assert {m["lr"] for m in moved} == {0.1, 0.08000000000000002}  # x1.2 stops at the bound.
  assert {m["units"] for m in moved} == {8, 10}  # 6.4 stops at the bound; 9.6 rounds.
  assert {m["opt"] for m in moved} == {"adam"}  # The only neighbour of the first choice.
  kept = pbt_values.perturbed({"lr": 0.05, "units": 8, "opt": "sgd"}, space_, rng,
                              keep=("units", "opt"))  # They shape the variables.
  assert (kept["units"], kept["opt"]) == (8, "sgd") and kept["lr"] != 0.05
  first = pbt_values.first_values(space_, random.Random(1))
  assert 1e-3 <= first["lr"] <= 1e-1 and 8 <= first["units"] <= 64, first
  assert pbt_values.first_values(space_, random.Random(1)) == first  # Seeded.
  for fields, message in (({"population": 1, "pbt_interval_steps": 10}, "population of at least 2"),
                          ({"population": 4}, "pbt_interval_steps of at least 1"),
                          ({"population": 4, "pbt_interval_steps": 10, "pruner": "median"},
                           "drop --pruner"),
                          ({"population": 4, "pbt_interval_steps": 10, "pbt_quantile": 0.6},
                           "at most 0.5")):
    with pytest.raises(errors.ConfigError, match=message):
      _options(tmp_path, scheduler="pbt", **fields)
  with pytest.raises(errors.ConfigError, match="apply to --scheduler=pbt"):
    _options(tmp_path, population=4)
  options = _options(tmp_path, scheduler="pbt", population=4, pbt_interval_steps=100)
  study = study_lib.open_study(options, create=True)
  for program, message in ((["--train_steps=100"], "at least two generations"),
                           (["--train_steps=300", "--warmup_steps=50"], "--warmup_steps")):
    with pytest.raises(errors.ConfigError, match=message):
      pbt.with_generations(study, ["python", *program], options)
  assert pbt.with_generations(study, ["python", "--train_steps=250"], options).trials == 12


@pytest.mark.parametrize("population,quantile,direction", [
    (4, 0.25, "maximize"), (5, 0.25, "minimize"), (6, 0.34, "maximize"), (8, 0.25, "minimize")])
def test_a_member_is_sure_to_keep_its_values_only_when_every_missing_result_keeps_them(
    tmp_path, population, quantile, direction):
  options = _options(tmp_path, scheduler="pbt", population=population, pbt_interval_steps=10,
                     pbt_quantile=quantile, direction=direction,
                     space="learning_rate=loguniform(1e-4,1e-1)")
  rng, early = random.Random(population), 0
  for _ in range(100):
    # Few distinct values (ties) and divergence (None), with some results still missing.
    values = [rng.choice([0.1, 0.2, 0.2, 0.3, 0.4, None]) for _ in range(population)]
    results = [types.SimpleNamespace(value=v, params={"learning_rate": 0.01 * (m + 1)})
               for m, v in enumerate(values)]
    missing = rng.sample(range(population), rng.randint(1, min(3, population - 1)))
    partial = [None if m in missing else r for m, r in enumerate(results)]
    sure = pbt_plan.sure_to_keep(partial, options)
    early += bool(sure)
    for filled in itertools.product([0.05, 0.2, 0.5, None], repeat=len(missing)):
      complete = list(results)
      for m, v in zip(missing, filled):
        complete[m] = types.SimpleNamespace(value=v, params=results[m].params)
      try:
        plans = pbt_plan.plans(complete, options, generation=1)
      except trial_job.TrialFailed:  # Every member diverged.
        continue
      sources = {source for _, source in plans}
      for member in sure:  # It keeps its values, and no member takes its checkpoint.
        assert plans[member] == (complete[member].params, None), (values, filled, member)
        assert member not in sources, (values, filled, member)
  assert early > 5  # Members do go on early.


def test_a_trial_whose_runner_died_before_its_first_heartbeat_is_retried(tmp_path,
                                                                          monkeypatch):
  monkeypatch.setattr(storage_lib, "GRACE_SECS", 1)
  study = optuna.create_study(storage=storage_lib.open_storage(f"sqlite:///{tmp_path}/s.db"))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    study.ask()  # Running, and never beaten: its runner was killed at once.
    time.sleep(1.2)
    study_lib.fail_stale(study)  # Its clock starts.
    assert [t.state.name for t in study.get_trials()] == ["RUNNING"]
    time.sleep(2.5)
    study_lib.fail_stale(study)
  assert [t.state.name for t in study.get_trials()] == ["FAIL", "WAITING"]


def test_a_progress_line_counts_the_studys_trials_and_says_the_best_and_the_eta(tmp_path):
  study = optuna.create_study(direction="maximize")
  for state, value, seconds in ((optuna.trial.TrialState.COMPLETE, 0.9, 10),
                                (optuna.trial.TrialState.PRUNED, None, 5)):
    study.add_trial(optuna.trial.create_trial(state=state, value=value,
                                              user_attrs={"seconds": seconds}))
  study.ask()  # Running.
  options = _options(tmp_path, trials=6)
  assert sweep_progress.describe(study, options, slots=2) == (
      "2 of 6 finished (1 complete, 1 pruned, 0 diverged), 1 running, 0 failed; best "
      "accuracy 0.9 (trial 0); ETA 15 s")  # 4 trials left, 7.5 s each, two at once.


@pytest.mark.processes
def test_a_pruned_trial_stops_on_every_worker_and_is_recorded_pruned(tmp_path):
  code, output = _sweep(
      tmp_path, "--space=learning_rate=choice(0.1,0.0001)", "--sampler=grid", "--pruner=asha",
      "--min_resource_steps=100", "--reduction_factor=2", "--strategy=multi_worker", "--workers_per_trial=2", program=[*DNN, "--train_steps=1000"])
  assert code == 0, output[-5000:]
  good, bad = sorted(_trials(tmp_path), key=lambda t: -t["params"]["learning_rate"])
  assert good["state"] == "complete" and good["steps"] == 1000, good
  assert bad["state"] == "pruned" and bad["steps"] < 1000, bad
  log = open(os.path.join(bad["model_dir"], "launch.log")).read()
  stops = [line for line in log.splitlines() if "early stopping at global step" in line]
  assert len(stops) == 2 and any("the sweep's pruner stopped trial 1" in line
                                  for line in stops), log[-3000:]
  steps = {re.search(r"global step (\d+)", line).group(1) for line in stops}
  assert len(steps) == 1, stops  # Both workers stop at one step.


@pytest.mark.processes
def test_a_first_rung_past_the_last_step_is_refused_before_any_trial(tmp_path):
  # It exited 0 after running every trial to its end, none pruned.
  code, output = _sweep(tmp_path, "--space=learning_rate=choice(0.1,0.0001)", "--sampler=grid",
                        "--pruner=asha", "--min_resource_steps=1000",
                        program=[*DNN, "--train_steps=200"])
  assert code == 2, output[-3000:]
  assert output == (
      "estimator-dist sweep: error: --min_resource_steps=1000 puts the first rung of --pruner=asha "
      "at or past the last step of the trials (the program's --train_steps=200), so it would "
      "prune no trial: give a --min_resource_steps below 200 (e.g. --min_resource_steps=50), "
      "or more --train_steps.\n"), output[-3000:]
  assert not os.listdir(tmp_path), os.listdir(tmp_path)  # No study, no trial.


@pytest.mark.processes
def test_each_trial_of_an_unmodified_program_trains_in_its_own_directory(tmp_path):
  """tests/programs/hparams_object.py never imports estimator_dist and its --model_dir has
  a default, as most programs' do: every trial once trained (and resumed) there, and the
  sweep stopped (`trial 0 ended without an evaluation in .../trial_0/eval`)."""
  code, output = _sweep(tmp_path, "--space=learning_rate=choice(0.05,0.2)", "--sampler=grid",
                        "--metric=accuracy", "--direction=maximize",
                        program=[helpers.PYTHON, "-m", "tests.programs.hparams_object",
                                 "--train_steps=20"])
  assert code == 0, output[-3000:]
  trials = _trials(tmp_path)
  assert len(trials) == 2 and all(t["state"] == "complete" for t in trials), trials
  for number in range(2):
    trial_dir = tmp_path / f"trial_{number}"
    assert tf.train.latest_checkpoint(str(trial_dir)).endswith("model.ckpt-20"), number
    log = (trial_dir / "launch.log").read_text()
    # The program's default: in the system's temporary directory (the job's, for a task).
    assert re.search(rf"the sweep's trial trains in its own model_dir, {trial_dir}, not in "
                     rf"the program's /\S+/hparams_model\n", log), log[-2000:]


@pytest.mark.processes
def test_a_metric_the_program_does_not_report_fails_the_first_trial(tmp_path):
  code, output = _sweep(tmp_path, "--space=learning_rate=choice(0.1)", "--metric=auc",
                        program=[*DNN, "--train_steps=300"])
  assert code == 2, output[-3000:]
  assert "eval metric 'auc', but the program's evaluations report only ['accuracy', " \
         "'loss']; pass one of them as --metric" in output


@pytest.mark.processes
def test_a_pbt_population_exploits_survives_kill_9_and_ends_complete(tmp_path):
  args = ["--scheduler=pbt", "--population=4", "--pbt_interval_steps=100", "--parallel=2",
          "--space=learning_rate=loguniform(1e-4,0.5)", "--seed=3", "--progress_secs=0"]
  program = [*DNN, "--train_steps=200"]  # Two generations.
  first = helpers.Job(command=[helpers.PYTHON, "-m", "estimator_dist.cli", "sweep",
                               f"--sweep_dir={tmp_path}", *args, "--", *program])
  deadline = time.monotonic() + 300
  while "estimator-dist sweep: trial 5 started" not in first.output:  # In generation 1.
    assert time.monotonic() < deadline and first.process.poll() is None, first.output[-3000:]
    time.sleep(0.1)
  # The third of generation 0's four results ranks one member between two others: it goes
  # on at once, without waiting for the fourth.
  early = re.search(r"generation 1: member (\d) goes on before generation 0 has every "
                    r"result", first.output)
  assert early and first.output.index(early.group(0)) < first.output.index(
      "estimator-dist sweep: trial 4 started"), first.output[-3000:]
  # kill -9 of the sweep alone: its launchers and their tasks end with it.
  left = psutil.Process(first.process.pid).children(recursive=True)
  os.kill(first.process.pid, signal.SIGKILL)
  _, alive = psutil.wait_procs(left, timeout=30)
  assert not alive, [" ".join(p.cmdline())[:200] for p in alive]
  first.kill()
  code, output = _sweep(tmp_path, *args, program=program)
  assert code == 0, output[-5000:]
  with open(tmp_path / "sweep.json") as f:
    report = json.load(f)
  members = report["pbt"]["members"]
  assert [[(s["generation"], s["start_step"], s["steps"]) for s in m["segments"]]
          for m in members] == [[(0, 0, 100), (1, 100, 200)]] * 4, members
  segments = {s["trial"]: (m["member"], s) for m in members for s in m["segments"]}
  exploits = [(member, s) for member, s in segments.values() if s["exploited"]]
  assert exploits, members  # The bottom quarter of four (and any that diverged).
  for member, s in exploits:
    source_member, source = segments[s["exploited"]["trial"]]
    assert source_member == s["exploited"]["member"] != member
    assert (source["steps"], s["exploited"]["checkpoint"]) == (
        s["start_step"], f"model.ckpt-{s['start_step']}")
    ratio = s["values"]["learning_rate"] / source["values"]["learning_rate"]
    assert (round(ratio, 9) in (0.8, 1.2) or
            s["values"]["learning_rate"] in (1e-4, 0.5)), (s, source)
    # The member's model_dir went on from the other member's checkpoint, byte for byte.
    data = f"model.ckpt-{s['start_step']}.data-00000-of-00001"
    assert (tmp_path / f"member_{member}" / data).read_bytes() == (
        tmp_path / f"member_{source_member}" / data).read_bytes()
  for m in members:
    # Only the last segment's job draws the member's curves.
    log = (tmp_path / f"member_{m['member']}" / "launch.log").read_text()
    parts = [log.split(f"# trial {s['trial']}:")[1].split("# trial ")[0] for s in m["segments"]]
    assert ["the job's curves:" in part for part in parts] == [False, True], log[-3000:]
  assert report["best"]["number"] in [m["segments"][-1]["trial"] for m in members]
  assert "from member" in (tmp_path / "report.md").read_text()
  assert (tmp_path / "pbt.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.processes
def test_a_killed_sweep_run_again_retries_its_trial_from_its_checkpoint(tmp_path):
  args = ["--space=learning_rate=choice(0.05,0.1,0.2)", "--sampler=grid"]
  # Long enough (seconds, at ~1000 steps/s, and an evaluation at each checkpoint) to be
  # killed in the middle: the kill comes within a tenth of a second of checkpoint 1000's
  # graph, the last file its save writes (a kill between its index and its graph leaves
  # it incomplete, and the retry rightly resumes from checkpoint 500).
  program = [*DNN, "--train_steps=2000", "--save_checkpoints_steps=500"]
  first = helpers.Job(command=[helpers.PYTHON, "-m", "estimator_dist.cli", "sweep",
                               f"--sweep_dir={tmp_path}", *args, "--", *program])
  deadline = time.monotonic() + 300
  while not (tmp_path / "trial_1" / "model.ckpt-1000.meta").exists():
    assert time.monotonic() < deadline and first.process.poll() is None, first.output[-3000:]
    time.sleep(0.1)
  first.kill()  # kill -9 of the sweep and its trials.
  code, output = _sweep(tmp_path, *args, program=program)
  assert code == 0, output[-5000:]
  trials = _trials(tmp_path)
  states = sorted((t["state"], t["params"]["learning_rate"]) for t in trials)
  assert [s for s in states if s[0] == "complete"] == [
      ("complete", 0.05), ("complete", 0.1), ("complete", 0.2)], states
  (failed,) = [t for t in trials if t["state"] == "fail"]  # The interrupted one.
  (retried,) = [t for t in trials if t["number"] > failed["number"] and
                t["params"] == failed["params"]]
  assert retried["model_dir"] == failed["model_dir"]
  # The chief's log, of both runs: the retry's first restore.
  log = helpers.task_logs(retried["model_dir"]).split(f"{shown_output.STARTED} chief:0 ")[-1]
  restored = re.search(r"Restoring parameters from \S*model\.ckpt-(\d+)", log)
  assert restored and 1000 <= int(restored.group(1)) < 2000, log[-3000:]  # Not from 0.
  with sqlite3.connect(tmp_path / "study.db") as db:  # Exactly the trials asked.
    assert db.execute("SELECT COUNT(*) FROM trials WHERE state='COMPLETE'").fetchone() == (3,)


def _write_mnist_npz(path):
  """The digits as a Keras-format MNIST .npz, which --data_path takes."""
  (x, y), (x_eval, y_eval) = model_zoo_data.load()
  np.savez(path, x_train=(x * 255).astype(np.uint8), y_train=y,
           x_test=(x_eval * 255).astype(np.uint8), y_test=y_eval)


@pytest.mark.processes
def test_a_failed_grid_point_stops_the_sweep_in_one_line_and_runs_once_when_run_again(
    tmp_path):
  digits, late = tmp_path / "digits.npz", tmp_path / "late.npz"
  _write_mnist_npz(digits)  # late.npz is missing at first: its point's trial fails.
  sweep_dir = tmp_path / "sweep"
  # --seed=2: the sampler, were it asked for values, would run the digits point again.
  args = [f"--space=data_path=choice({digits},{late})", "--sampler=grid", "--seed=2",
          "--strategy=multi_worker", "--workers_per_trial=2"]
  program = [*DNN, "--train_steps=20"]
  code, output = _sweep(sweep_dir, *args, program=program)
  assert code == 1, output[-5000:]
  message = output.splitlines()[-1]
  log = sweep_dir / "trial_1" / "launch.log"
  assert re.fullmatch(
      rf"estimator-dist sweep: error: trial 1 failed \(exit code 2\): "
      rf"--data_path={re.escape(str(late))}: \[(chief|worker):0\] estimator-dist: error: "
      rf"--data_path={re.escape(str(late))} is not a Keras-format MNIST \.npz .*No such "
      rf"file or directory.*\. \(log: {re.escape(str(log))}\)", message), output[-3000:]
  assert " I1" not in message and "INFO" not in message
  _write_mnist_npz(late)
  code, output = _sweep(sweep_dir, *args, program=program)
  assert code == 0, output[-5000:]
  trials = _trials(sweep_dir)
  assert sorted((t["number"], t["state"], t["params"]["data_path"]) for t in trials) == [
      (0, "complete", str(digits)), (1, "fail", str(late)), (2, "complete", str(late))]
  with sqlite3.connect(sweep_dir / "study.db") as db:  # No trial besides these.
    assert db.execute("SELECT state, COUNT(*) FROM trials GROUP BY state ORDER BY state"
                      ).fetchall() == [("COMPLETE", 2), ("FAIL", 1)]


@pytest.mark.processes
def test_slurm_array_runners_share_a_postgresql_study(tmp_path):
  """The script `--engine=slurm` prints, its two array tasks run at once (as SLURM would
  run them on two nodes), against a real PostgreSQL server."""
  with postgres_server.running() as url:
    flags = ["--space=learning_rate=loguniform(0.02,0.3)", "--sampler=random", "--seed=3",
             "--trials=3", f"--storage={url}"]
    code, script = _sweep(tmp_path, "--engine=slurm", "--parallel=2", *flags,
                          program=[*DNN, "--train_steps=200"])
    assert code == 0, script
    script = script[script.index("#!/bin/bash"):]
    assert "#SBATCH --array=0-1" in script and "#SBATCH --cpus-per-task=1" in script
    assert "SQLite" not in script  # It warns only for a SQLite study.
    (tmp_path / "sweep.sbatch").write_text(script)
    runners = [helpers.Job(command=["bash", str(tmp_path / "sweep.sbatch")],
                           env=helpers.child_env(SLURM_ARRAY_TASK_ID=str(i))) for i in (0, 1)]
    for runner_job in runners:
      assert runner_job.wait(400) == 0, runner_job.output[-5000:]
    study = optuna.load_study(study_name=study_lib.STUDY_NAME, storage=url)
    states = [t.state for t in study.trials if not t.user_attrs.get("surplus")]
    assert states == [optuna.trial.TrialState.COMPLETE] * 3, study.trials
    ran = [line for r in runners for line in r.output.splitlines() if " started on CPUs" in line]
    assert len(ran) == 3 and all(r.output.count("started on CPUs") for r in runners), ran
    code, report = _sweep(tmp_path, "--report", f"--storage={url}", program=[])
    assert code == 0 and report.count(" complete |") == 3, report


@pytest.mark.processes
def test_a_spark_sweep_runs_each_trial_as_a_barrier_stage(tmp_path):
  code, output = _sweep(tmp_path, "--engine=spark", "--spark_master=local[2]",
                        "--space=learning_rate=choice(0.1)", "--sampler=grid",
                        "--strategy=multi_worker", "--workers_per_trial=2",
                        program=[*DNN, "--train_steps=200"])
  assert code == 0, output[-5000:]
  trials = _trials(tmp_path)
  assert [t["state"] for t in trials] == ["complete"], trials
  for trial in trials:
    assert trial["steps"] == 200 and trial["value"] > 0.8, trial
    log = open(os.path.join(trial["model_dir"], "launch.log")).read()
    assert "strategy=multi_worker workers=2" in log, log[-2000:]  # The chief's summary.


def test_the_runner_reads_evaluations_as_estimator_does_without_tensorflow(tmp_path):
  """The same {step: metrics} as Estimator's read_eval_metrics; a record still being
  written (the last one, cut short) is left for the next read."""
  eval_dir = tmp_path / "eval"
  with tf.Graph().as_default(), tf.compat.v1.summary.FileWriter(str(eval_dir)) as writer:
    for step, accuracy in ((100, 0.5), (200, 0.75), (300, 0.875)):  # As Estimator writes.
      writer.add_summary(tf.compat.v1.Summary(value=[
          tf.compat.v1.Summary.Value(tag="accuracy", simple_value=accuracy),
          tf.compat.v1.Summary.Value(tag="loss", simple_value=1 - accuracy)]), step)
  expected = dict(read_eval_metrics(str(eval_dir)))
  assert event_files.eval_metrics(str(tmp_path)) == expected and len(expected) == 3
  (path,) = eval_dir.iterdir()
  path.write_bytes(path.read_bytes()[:-5])
  assert event_files.eval_metrics(str(tmp_path)) == {s: expected[s] for s in (100, 200)}
  assert event_files.eval_metrics(str(tmp_path / "none")) == {}
