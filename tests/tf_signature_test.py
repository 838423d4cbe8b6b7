"""TensorFlow's form, train_and_evaluate(estimator, train_spec, eval_spec), and an
Estimator's RunConfig honoured field by field under the job's strategy."""

import glob
import logging
import os
import re

import numpy as np
import pytest
import tensorflow as tf

import estimator_dist as ed
from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.outputs import event_files
from estimator_dist.strategies import factory
from estimator_dist.training import one_pass
from estimator_dist.training import run as run_lib
from estimator_dist.training import run_config_merge
from estimator_dist.training import spec_form
from tests import helpers

X = np.random.RandomState(0).rand(64, 3).astype(np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32)
CHIEF = ed.TaskInfo("chief", 0, 0, 1)


def input_fn():
  return tf.data.Dataset.from_tensor_slices((X, Y)).batch(16)


def model_fn(features, labels, mode, params):
  w = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
  predictions = tf.matmul(features, w)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions=predictions)
  loss = tf.reduce_mean(tf.square(predictions - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"]).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 3])
  return tf.estimator.export.TensorServingInputReceiver(x, x)


class Saves(tf.estimator.CheckpointSaverListener):
  def __init__(self):
    self.steps = []

  def after_save(self, session, global_step_value):
    self.steps.append(global_step_value)


class Counts(tf.estimator.SessionRunHook):
  def __init__(self):
    self.runs = 0

  def after_run(self, run_context, run_values):
    self.runs += 1


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  monkeypatch.setattr(run_config_merge, "_said", set())


def estimator(model_dir=None, **config):
  return tf.estimator.Estimator(model_fn, params={"learning_rate": 0.1},
                                config=tf.estimator.RunConfig(model_dir=model_dir, **config))


def test_the_specs_map_onto_the_run(tmp_path, caplog):
  hook, listener, eval_hook = Counts(), Saves(), Counts()
  exporter = tf.estimator.FinalExporter("final", serving_input_fn)
  with caplog.at_level(logging.INFO, logger="absl"):
    arguments = spec_form.run_arguments(
        estimator(str(tmp_path)),
        tf.estimator.TrainSpec(input_fn, max_steps=30, hooks=[hook], saving_listeners=[listener]),
        tf.estimator.EvalSpec(input_fn, steps=3, name="holdout", hooks=[eval_hook],
                              exporters=[exporter], throttle_secs=5),
        fields={"strategy": "multi_worker", "batch_size": 16})
  options = arguments["options"]
  assert (options.strategy, options.model_dir, options.train_steps, options.eval_steps,
          options.eval_throttle_secs, options.batch_size, options.exporters) == (
              "multi_worker", str(tmp_path), 30, 3, 5, 16, (exporter,))
  assert "EvalSpec name 'holdout' is not used" in caplog.text
  assert "EvalSpec start_delay_secs (120) is not used" in caplog.text
  run = run_lib.TrainingRun(**arguments)  # Builds nothing: the specs' parts reach the run.
  spec = run.train_spec(factory.adapter_class("local")(task=CHIEF))
  assert hook in spec.hooks and spec.saving_listeners[-1] is listener
  assert run.eval_spec.hooks[1:] == (eval_hook,) and run.eval_spec.exporters == (exporter,)


def test_the_model_dir_is_the_estimators_else_the_jobs(tmp_path):
  specs = tf.estimator.TrainSpec(input_fn, max_steps=5), tf.estimator.EvalSpec(input_fn)
  without = estimator()  # Estimator makes a temporary directory for want of one.
  try:
    arguments = spec_form.run_arguments(without, *specs, fields={"model_dir": str(tmp_path)})
    assert arguments["options"].model_dir == str(tmp_path)
    with pytest.raises(ed.ConfigError, match="the Estimator has no model_dir"):
      spec_form.run_arguments(without, *specs)
  finally:
    os.rmdir(without.model_dir)  # Left empty; the suite leaves nothing behind.
  with pytest.raises(ed.ConfigError, match=f"model_dir is {tmp_path} but the job's is /other"):
    spec_form.run_arguments(estimator(str(tmp_path)), *specs, fields={"model_dir": "/other"})


@pytest.mark.parametrize("train,evaluation,keywords,message", [
    (tf.estimator.TrainSpec(input_fn, max_steps=5), input_fn, {},
     "takes a tf.estimator.TrainSpec and a tf.estimator.EvalSpec, got TrainSpec and function"),
    (tf.estimator.TrainSpec(input_fn, max_steps=5), tf.estimator.EvalSpec(input_fn),
     {"train_steps": 9}, r"train_steps \(the TrainSpec.max_steps\) is the spec's to set"),
    (tf.estimator.TrainSpec(input_fn, max_steps=5), tf.estimator.EvalSpec(input_fn),
     {"hooks": [Counts()]}, r"as TrainSpec\(hooks=...\), not as hooks="),
])
def test_the_specs_form_refuses(tmp_path, train, evaluation, keywords, message):
  with pytest.raises(ed.ConfigError, match=message):
    ed.train_and_evaluate(estimator(str(tmp_path)), train, evaluation, **keywords)


def test_tensorflows_form_trains_with_the_run_config_and_returns_what_tensorflow_does(
    tmp_path):
  listener, eval_hook = Saves(), Counts()
  metrics, exports = ed.train_and_evaluate(
      estimator(str(tmp_path), keep_checkpoint_max=1, save_checkpoints_steps=10),
      tf.estimator.TrainSpec(input_fn, max_steps=30, saving_listeners=[listener]),
      tf.estimator.EvalSpec(input_fn, steps=None, throttle_secs=0, hooks=[eval_hook],
                            exporters=[tf.estimator.FinalExporter("final", serving_input_fn)]))
  assert metrics["global_step"] == 30 and eval_hook.runs >= 4
  export, = exports
  assert os.path.dirname(export.decode()) == str(tmp_path / "export" / "final")
  assert listener.steps[-1] == 30 and {10, 20} <= set(listener.steps)
  assert [os.path.basename(p) for p in glob.glob(str(tmp_path / "model.ckpt-*.index"))] == [
      "model.ckpt-30.index"]


def test_the_run_config_counts_where_no_option_was_set(tmp_path, caplog):
  own = tf.estimator.RunConfig(save_summary_steps=7, keep_checkpoint_max=2, tf_random_seed=42,
                               log_step_count_steps=5, save_checkpoints_secs=30,
                               keep_checkpoint_every_n_hours=3)
  adapter = factory.adapter_class("local")(task=CHIEF)
  options = ed.TrainOptions(model_dir=str(tmp_path), train_steps=10)
  config = run_config_merge.run_config(adapter, options, own)
  assert (config.save_summary_steps, config.keep_checkpoint_max, config.tf_random_seed,
          config.log_step_count_steps, config.save_checkpoints_secs,
          config.save_checkpoints_steps, config.keep_checkpoint_every_n_hours,
          config.model_dir) == (7, 2, 42, 5, 30, None, 3, str(tmp_path))
  explicit = options.replace(keep_checkpoint_max=3, random_seed=1, save_checkpoints_steps=50)
  with caplog.at_level(logging.INFO, logger="absl"):
    config = run_config_merge.run_config(adapter, explicit, own)
  assert (config.keep_checkpoint_max, config.tf_random_seed, config.save_checkpoints_steps,
          config.save_checkpoints_secs, config.save_summary_steps) == (3, 1, 50, None, 7)
  assert "keep_checkpoint_max=3 (the job's --keep_checkpoint_max) over the Estimator's " \
         "RunConfig's 2" in caplog.text
  assert "save_checkpoints_steps=50 (the job's --save_checkpoints_steps) over the " \
         "Estimator's RunConfig's save_checkpoints_secs=30" in caplog.text
  # The default set on purpose counts as set: --keep_checkpoint_max=5 keeps 5, not 2.
  chosen = run_config_merge.run_config(adapter, options.replace(keep_checkpoint_max=5,
                                                                random_seed=0), own)
  assert (chosen.keep_checkpoint_max, chosen.tf_random_seed) == (5, 0)
  # A RunConfig's keep_checkpoint_max=None keeps every checkpoint, as TensorFlow says; its
  # seed None is no seed, and the job gives its one seed.
  every = tf.estimator.RunConfig(keep_checkpoint_max=None)
  config = run_config_merge.run_config(adapter, options, every)
  assert (config.keep_checkpoint_max, config.tf_random_seed) == (None, 0)
  # Without an Estimator's RunConfig, the options alone, as before.
  plain = run_config_merge.run_config(adapter, options)
  assert (plain.keep_checkpoint_max, plain.tf_random_seed, plain.save_checkpoints_secs) == (
      5, 0, 600)


def test_the_strategy_sets_device_filters_and_threads_over_the_session_config(tmp_path, caplog):
  task = cluster_lib.task_in({"chief": ["h:1"], "worker": ["h:2"], "ps": ["h:3"]}, "worker", 0,
                             source="TF_CONFIG")
  adapter = factory.adapter_class("parameter_server")(
      task=task, options=factory.options_for("parameter_server", inter_op_threads=2))
  own = tf.compat.v1.ConfigProto(device_filters=["/job:ps"], inter_op_parallelism_threads=4,
                                 intra_op_parallelism_threads=3, log_device_placement=True)
  options = ed.TrainOptions(strategy="parameter_server", model_dir=str(tmp_path), train_steps=5)
  with caplog.at_level(logging.INFO, logger="absl"):
    config = run_config_merge.run_config(adapter, options, tf.estimator.RunConfig(
        session_config=own)).session_config
  assert list(config.device_filters) == ["/job:ps", "/job:worker/task:0"]
  assert (config.inter_op_parallelism_threads, config.intra_op_parallelism_threads,
          config.log_device_placement) == (2, 3, True)
  assert ("the parameter_server strategy sets session_config's device_filters, "
          "inter_op_parallelism_threads over the Estimator's RunConfig's") in caplog.text
  # What Estimator fills in when the program set none is not the program's.
  filled = estimator(str(tmp_path)).config
  assert run_config_merge.run_config(adapter, options, filled).session_config == (
      adapter.session_config())


def test_horovods_other_ranks_save_nothing_and_say_so(tmp_path, caplog):
  options = ed.TrainOptions(strategy="horovod", model_dir=str(tmp_path), train_steps=5)
  own = tf.estimator.RunConfig(save_summary_steps=7, save_checkpoints_steps=20)
  with caplog.at_level(logging.INFO, logger="absl"):
    chief = run_config_merge.run_config(
        factory.adapter_class("horovod")(task=ed.TaskInfo("chief", 0, 0, 2)), options, own)
  assert (chief.save_summary_steps, chief.save_checkpoints_steps) == (7, 20)
  assert ("the horovod strategy keeps the RunConfig's save_checkpoints_steps, "
          "save_checkpoints_secs, save_summary_steps, log_step_count_steps on the chief only: "
          "the other tasks write no checkpoints") in caplog.text  # Where the logs are seen.
  adapter = factory.adapter_class("horovod")(task=ed.TaskInfo("worker", 1, 1, 2))
  with caplog.at_level(logging.INFO, logger="absl"):
    config = run_config_merge.run_config(adapter, options, own)
  assert (config.save_summary_steps, config.save_checkpoints_steps,
          config.log_step_count_steps) == (None, None, None)
  assert ("the horovod strategy sets save_checkpoints_steps=None, save_summary_steps=None, "
          "log_step_count_steps=None over the RunConfig's on worker 1: the chief alone writes "
          "checkpoints, summaries and step logs") in caplog.text


def sharded_input_fn(input_context=None):
  data = tf.data.Dataset.from_tensor_slices((X, Y))
  if input_context:
    data = data.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  return data.batch(16)


@pytest.mark.parametrize("strategy,task,function,steps,shares", [
    ("local", CHIEF, input_fn, 4, [4]),
    # A size tf.data cannot tell (a filter, files): read once to count it.
    ("local", CHIEF, lambda: input_fn().filter(lambda x, y: True), 4, [4]),
    # Dealt by batch, 11 batches: 6 and 5, so 5 steps, none read twice.
    ("horovod", ed.TaskInfo("worker", 1, 1, 2),
     lambda: tf.data.Dataset.from_tensor_slices((X, Y)).batch(6), 5, [6, 5]),
    ("horovod", ed.TaskInfo("chief", 0, 0, 2), sharded_input_fn, 2, [2, 2]),  # Its own shards.
    ("parameter_server", cluster_lib.task_in({"chief": ["h:1"], "worker": ["h:2"],
                                              "ps": ["h:3"]}, "worker", 0, source="TF_CONFIG"),
     input_fn, 4, [2, 2]),  # Asynchronous: every batch is a step.
])
def test_a_train_spec_without_max_steps_trains_one_pass_over_the_input(
    strategy, task, function, steps, shares, caplog):
  adapter = factory.adapter_class(strategy)(task=task)
  with caplog.at_level(logging.INFO, logger="absl"):
    assert one_pass.steps(function, adapter, params={}, config=None) == steps
  assert f"one pass over the input is {steps} steps" in caplog.text
  assert f"batches per worker {shares}" in caplog.text


@pytest.mark.parametrize("function,message", [
    (lambda: input_fn().repeat(), "endless .it repeats."),
    (lambda: tf.data.Dataset.from_tensors(X).repeat().filter(lambda x: True),
     "of a size tf.data cannot tell before reading it; [0-9]+ batches were read in 0.5s to "
     "count them, and it went on .it may never end.: set TrainSpec"),
    (lambda: (X, Y), "returns tuple, whose end cannot be counted"),
    (lambda: input_fn().take(0), "one pass over its input is no step"),
])
def test_an_input_without_a_countable_end_needs_max_steps(function, message, monkeypatch):
  monkeypatch.setattr(one_pass, "COUNT_SECS", 0.5)
  with pytest.raises(ed.ConfigError, match=message):
    one_pass.steps(function, factory.adapter_class("local")(task=CHIEF), params={},
                   config=None)


def test_tensorflows_form_without_max_steps_trains_until_the_input_ends(tmp_path):
  metrics, _ = ed.train_and_evaluate(estimator(str(tmp_path)),
                                     tf.estimator.TrainSpec(input_fn),
                                     tf.estimator.EvalSpec(input_fn, throttle_secs=0))
  assert metrics["global_step"] == 4  # 64 examples, batches of 16.


@pytest.mark.parametrize("kind,strategy", [
    (tf.distribute.MirroredStrategy, "mirrored"),
    (tf.compat.v1.distribute.MirroredStrategy, "mirrored"),
    (tf.distribute.MultiWorkerMirroredStrategy, "multi_worker"),
    (tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy, "multi_worker"),
    (tf.compat.v1.distribute.experimental.ParameterServerStrategy, "parameter_server"),
    (tf.distribute.OneDeviceStrategy, None),
])
def test_a_programs_own_distribution_is_replaced_by_the_jobs_or_refused(tmp_path, kind,
                                                                         strategy):
  """Replaced when both update alike (synchronous or not); refused when they do not."""
  distribution = kind.__new__(kind)  # Its kind is all that counts; nothing starts.
  options = ed.TrainOptions(strategy=strategy or "local", model_dir=str(tmp_path),
                            train_steps=5)
  own = tf.estimator.RunConfig(train_distribute=distribution)
  if strategy is None:
    with pytest.raises(ed.ConfigError, match="OneDeviceStrategy .a strategy estimator_dist "
                       "does not run., but the job's strategy is local: drop train_distribute"):
      run_config_merge.checked(own, options)
    return
  assert run_config_merge.checked(own, options) is own
  synchronous = strategy != "parameter_server"
  for job in ("horovod", "mirrored", "multi_worker", "local"):
    if synchronous:  # The same math: the job's strategy stands in for the program's.
      assert run_config_merge.checked(own, options.replace(strategy=job)) is own
  other = "horovod" if not synchronous else "parameter_server"
  updates = ("asynchronous updates, the job's are synchronous" if not synchronous else
             "synchronous updates, the job's are asynchronous")
  with pytest.raises(ed.ConfigError, match=(
      f"train_distribute={kind.__name__} .a {strategy} strategy: {updates}., but the job's "
      f"strategy is {other}: drop train_distribute from the RunConfig .the job's strategy "
      f"distributes. or run the job with --strategy={strategy}.")):
    run_config_merge.checked(own, options.replace(strategy=other))


@pytest.mark.processes
def test_a_tensorflow_program_edited_once_trains_as_its_run_config_says(tmp_path):
  """tests/programs/tf_signature.py: an Estimator with RunConfig(save_summary_steps=7,
  keep_checkpoint_max=2, log_step_count_steps=5, save_checkpoints_steps=20) and TensorFlow's
  specs, 60 steps on 2 workers under multi_worker."""
  code, output = helpers.launch("multi_worker", "tests.programs.tf_signature",
                                f"--model_dir={tmp_path}")
  assert code == 0, output[-3000:]
  summary, = helpers.summaries(output)
  assert float(summary["eval_accuracy"]) >= 0.5, summary
  returned = re.findall(r"returned=(.*)", output)
  assert returned == ["metrics,[]", "metrics,[]"], returned  # The chief's, on every task.
  # keep_checkpoint_max=2 of the checkpoints every 20 steps (0, 20, 40, 60).
  kept = sorted(int(re.search(r"ckpt-(\d+)", p).group(1))
                for p in glob.glob(str(tmp_path / "model.ckpt-*.index")))
  assert kept == [40, 60], kept
  # The chief's summaries every 7 steps, its step counter every 5.
  scalars = event_files.scalars(str(tmp_path))
  losses = [step for step, tags in scalars.items() if "loss" in tags]
  assert len(losses) >= 8 and {b - a for a, b in zip(losses, losses[1:])} == {7}, losses
  rates = [step for step, tags in scalars.items() if "global_step/sec" in tags]
  assert len(rates) >= 10 and {b - a for a, b in zip(rates, rates[1:])} == {5}, rates
  assert helpers.task_logs(str(tmp_path)).count("global_step/sec: ") >= 10, output[-3000:]
