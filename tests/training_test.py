"""train_and_evaluate in one process: what it returns, what it takes, what it refuses."""

import logging

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

import estimator_dist as ed
from estimator_dist import errors
from estimator_dist.outputs import checkpoints as ed_checkpoints

X = np.random.RandomState(0).rand(64, 3).astype(np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32)


def input_fn():
  return tf.data.Dataset.from_tensor_slices((X, Y)).batch(16)


def make_model_fn(seen, key="learning_rate"):
  def model_fn(features, labels, mode, params):
    seen.append(params[key])
    w = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(params[key]).minimize(
        loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
  return model_fn


def test_returns_final_metrics_and_prints_the_summary(tmp_path, capsys):
  metrics = ed.train_and_evaluate(make_model_fn([]), input_fn, input_fn, model_dir=str(tmp_path),
                                  train_steps=30, batch_size=16,
                                  params={"learning_rate": 0.1})
  assert metrics["global_step"] == 30 and metrics["loss"] < 0.5
  line = [l for l in capsys.readouterr().out.splitlines() if "estimator-dist: summary:" in l]
  assert line and "strategy=local workers=1 replicas=1 steps=30 global_batch=16" in line[0]


def test_resuming_a_finished_run_only_evaluates(tmp_path):
  kwargs = dict(model_dir=str(tmp_path), train_steps=10, params={"learning_rate": 0.1})
  first = ed.train_and_evaluate(make_model_fn([]), input_fn, input_fn, **kwargs)
  again = ed.train_and_evaluate(make_model_fn([]), input_fn, input_fn, **kwargs)
  assert first["global_step"] == again["global_step"] == 10
  assert again["loss"] == pytest.approx(first["loss"])


def test_an_estimator_brings_its_model_fn_and_params(tmp_path):
  seen = []
  estimator = tf.estimator.Estimator(make_model_fn(seen), params={"learning_rate": 0.1})
  ed.train_and_evaluate(estimator, input_fn, model_dir=str(tmp_path), train_steps=5,
                        params={"extra": 1})
  assert seen and seen[0] == pytest.approx(0.1)


def test_learning_rate_sets_the_key_the_decorator_scales(tmp_path):
  seen = []
  model_fn = ed.distributed(make_model_fn(seen, "base_lr"), lr_param="base_lr")
  ed.train_and_evaluate(model_fn, input_fn, model_dir=str(tmp_path), train_steps=5,
                        learning_rate=0.05)
  assert seen[0] == pytest.approx(0.05)


@pytest.mark.parametrize("kwargs,message", [
    ({"train_steps": 0}, r"--train_steps \(0\) must be a positive integer"),
    ({"train_steps": 5, "model_dir": ""}, "model_dir must name a directory"),
    ({"train_steps": 5, "batch_size": -1}, r"batch_size \(-1\) must be a positive integer"),
    ({"train_steps": 5, "strategy": "spark"}, r"strategy \('spark'\) is not one of"),
    ({"train_steps": 5, "warmup_steps": 5}, r"warmup_steps \(5\) must be smaller than "
                                            r"train_steps \(5\)"),
    ({"train_steps": 5, "strategy_options": {"fusion": 1}},
     r"strategy 'local' does not take option\(s\) \['fusion'\]"),
])
def test_bad_arguments(tmp_path, kwargs, message):
  kwargs.setdefault("model_dir", str(tmp_path))
  with pytest.raises(ed.ConfigError, match=message):
    ed.train_and_evaluate(make_model_fn([]), input_fn, **kwargs)


def test_bad_input_fn(tmp_path):
  def train_input_fn(batch_size):
    return input_fn()
  with pytest.raises(ed.ConfigError, match=r"train_input_fn train_input_fn needs \['batch_size'\]"):
    ed.train_and_evaluate(make_model_fn([]), train_input_fn, model_dir=str(tmp_path),
                          train_steps=5)


def test_chief_evaluates_alone_while_tf_config_describes_the_cluster(tmp_path, monkeypatch):
  ed.train_and_evaluate(make_model_fn([]), input_fn, model_dir=str(tmp_path), train_steps=5,
                        params={"learning_rate": 0.1})
  monkeypatch.setenv("TF_CONFIG", '{"cluster": {"chief": ["127.0.0.1:1"], "worker": '
                     '["127.0.0.1:2"]}, "task": {"type": "chief", "index": 0}}')
  seen = []
  metrics = ed.evaluate(ed.distributed(make_model_fn(seen)), input_fn, model_dir=str(tmp_path),
                        params={"learning_rate": 0.1})
  assert metrics["global_step"] == 5
  assert seen and seen[0] == pytest.approx(0.1)  # one process: the rate is not scaled


def test_an_adapter_made_by_hand_is_started_and_may_be_given_as_the_strategy(tmp_path):
  from estimator_dist.strategies import local  # pylint: disable=g-import-not-at-top
  adapter = local.LocalAdapter(task=ed.TaskInfo("chief", 0, 0, 1))
  assert not adapter.started
  metrics = ed.train_and_evaluate(make_model_fn([]), input_fn, input_fn, strategy=adapter,
                                  model_dir=str(tmp_path), train_steps=5,
                                  params={"learning_rate": 0.1})
  assert adapter.started and metrics["global_step"] == 5


def test_a_tf_compat_v1_canned_estimator_trains_with_its_v1_optimizer(tmp_path):
  estimator = tf.compat.v1.estimator.LinearRegressor(
      [tf.feature_column.numeric_column("x", shape=[3])],
      optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.002))
  metrics = ed.train_and_evaluate(estimator, lambda: input_fn().map(lambda x, y: ({"x": x}, y)),
                                  lambda: input_fn().map(lambda x, y: ({"x": x}, y)),
                                  model_dir=str(tmp_path), train_steps=40)
  assert metrics["global_step"] == 40
  assert metrics["average_loss"] < 0.75 * float(np.mean(Y ** 2))  # From zero weights.


def test_a_keras_model_starts_from_its_own_weights(tmp_path):
  """model_to_estimator warm-starts from the Keras model's weights (a pretrained model
  is fine-tuned, not trained from scratch); a zero rate keeps them."""
  model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,), name="dense")])
  model.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse")
  weights = [np.array([[1.0], [-2.0], [0.5]], np.float32), np.array([0.25], np.float32)]
  model.set_weights(weights)
  estimator = tf.keras.estimator.model_to_estimator(keras_model=model)
  features = lambda: input_fn().map(lambda x, y: ({"dense_input": x}, y))  # noqa: E731
  ed.train_and_evaluate(estimator, features, features, model_dir=str(tmp_path / "run"),
                        train_steps=3, lr_scaling="none")
  reader = tf.train.load_checkpoint(str(tmp_path / "run"))
  keys = ed_checkpoints.keys_by_name(reader)
  np.testing.assert_array_equal(reader.get_tensor(keys["dense/kernel"]), weights[0])
  np.testing.assert_array_equal(reader.get_tensor(keys["dense/bias"]), weights[1])



def test_options_from_flags_unpacked_as_a_dict_trains_as_options_does(tmp_path):
  """The earlier README's `train_and_evaluate(..., **ed.options_from_flags())` still
  trains, warned, exactly as `options=ed.options_from_flags()` does."""
  def options_for(model_dir):
    values = flags.FlagValues()
    ed.define_flags(values)
    values(["program", f"--model_dir={model_dir}", "--train_steps=10", "--batch_size=16",
            "--learning_rate=0.1"])
    return ed.options_from_flags(values)
  model_fn = ed.distributed(make_model_fn([]))
  with pytest.warns(DeprecationWarning, match=r"options=ed\.options_from_flags\(\)"):
    unpacked = ed.train_and_evaluate(model_fn, input_fn, input_fn,
                                     **options_for(tmp_path / "unpacked"))
  given = ed.train_and_evaluate(model_fn, input_fn, input_fn,
                                options=options_for(tmp_path / "given"))
  assert unpacked["global_step"] == given["global_step"] == 10
  assert unpacked["loss"] == pytest.approx(given["loss"])


def test_an_eval_input_of_no_example_fails_before_its_metrics_are_written(tmp_path):
  def eval_input_fn():  # Not empty as far as tf.data can tell: a filter drops everything.
    return input_fn().unbatch().filter(lambda x, y: y[0] > 100.0).batch(16)
  with pytest.raises(ed.ConfigError, match=r"eval_input_fn eval_input_fn gives no example"):
    ed.train_and_evaluate(make_model_fn([]), input_fn, eval_input_fn, model_dir=str(tmp_path),
                          train_steps=5, params={"learning_rate": 0.1})
  assert not tf.io.gfile.glob(str(tmp_path / "eval" / "*"))  # No summary of zeros.


@pytest.mark.parametrize("eval_input_fn,message", [
    (lambda: input_fn().take(0), r"eval_input_fn <lambda> gives no example"),
    (lambda: input_fn().repeat(), r"eval_input_fn <lambda> repeats for ever and no eval_steps"),
])
def test_an_eval_input_tf_data_can_tell_is_empty_or_endless_is_refused_before_training(
    tmp_path, eval_input_fn, message):
  with pytest.raises(ed.ConfigError, match=message):
    ed.train_and_evaluate(make_model_fn([]), input_fn, eval_input_fn, model_dir=str(tmp_path),
                          train_steps=5, params={"learning_rate": 0.1})
  assert not tf.io.gfile.glob(str(tmp_path / "model.ckpt*"))


def test_an_evaluation_past_its_timeout_is_stopped_naming_the_cause(tmp_path):
  def endless():  # tf.data cannot tell that a generator never ends.
    while True:
      yield X[0], Y[0]

  def eval_input_fn():
    return tf.data.Dataset.from_generator(endless, output_signature=(
        tf.TensorSpec([3], tf.float32), tf.TensorSpec([1], tf.float32))).batch(16)
  with pytest.raises(errors.EvaluationStalled,
                     match=r"past its timeout of 2 s \(--eval_timeout_secs\); probable cause: "
                           r"an eval input that repeats for ever: set eval_steps"):
    ed.train_and_evaluate(make_model_fn([]), input_fn, eval_input_fn, model_dir=str(tmp_path),
                          train_steps=5, params={"learning_rate": 0.1}, eval_timeout_secs=2)


def test_profile_steps_record_once_and_a_job_resumed_past_them_says_so(tmp_path, caplog):
  options = dict(model_dir=str(tmp_path), params={"learning_rate": 0.1}, batch_size=16)
  ed.train_and_evaluate(make_model_fn([]), input_fn, input_fn, train_steps=30,
                        profile_steps="10:15", **options)
  trace = tmp_path / "plugins" / "profile" / "steps_10_15" / "chief_0.xplane.pb"
  recorded = trace.stat()
  assert recorded.st_size > 0
  with caplog.at_level(logging.INFO, logger="absl"):
    ed.train_and_evaluate(make_model_fn([]), input_fn, input_fn, train_steps=60,
                          profile_steps=(10, 15), **options)
  assert "this task's training began at step 30, past --profile_steps=10:15" in caplog.text
  assert trace.stat().st_mtime_ns == recorded.st_mtime_ns
  with pytest.raises(errors.ConfigError, match="never reaches"):
    ed.train_and_evaluate(make_model_fn([]), input_fn, input_fn, train_steps=60,
                          profile_steps="60:70", **options)


def test_a_partitioned_variable_fits_the_checkpoint_of_its_whole(tmp_path):
  # A canned Estimator partitions its DNN outside a tf.distribute strategy (horovod's
  # workers: .../part_0) and not inside one: each saves under the whole variable's name.
  with tf.Graph().as_default():
    tf.compat.v1.get_variable("dnn/bias", shape=[100])
    tf.compat.v1.train.create_global_step()
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver().save(session, str(tmp_path / "model.ckpt"), global_step=0)
  for shape, fits in (([100], True), ([101], False)):
    with tf.Graph().as_default():
      with tf.compat.v1.variable_scope(
          "dnn", partitioner=tf.compat.v1.min_max_variable_partitioner(max_partitions=1)):
        part, = tf.compat.v1.get_variable("bias", shape=shape)
      tf.compat.v1.train.create_global_step()
      assert part.name == "dnn/bias/part_0:0"
      if fits:
        ed_checkpoints.FitsTheModel(str(tmp_path)).begin()
      else:
        with pytest.raises(ed.ConfigError, match=r"variable 'dnn/bias' is \[101\] in the model"):
          ed_checkpoints.FitsTheModel(str(tmp_path)).begin()
