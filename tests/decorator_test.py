"""The decorator: argument checks, the learning-rate rule and warmup, gradient all-reduce."""

import re

import numpy as np
import pytest
import tensorflow as tf

import estimator_dist as ed
from estimator_dist.contract import cluster
from estimator_dist.strategies import local
from estimator_dist.training import decorator
from estimator_dist.training import rate_options
from estimator_dist.training import rate_record

TRAIN, EVAL = tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL


class Replicas(local.LocalAdapter):
  """A local adapter that reports `n` replicas (synchronous or not)."""

  def __init__(self, n, synchronous=True):
    super().__init__(task=cluster.LOCAL_TASK)
    self.n, self._synchronous = n, synchronous

  @property
  def synchronous(self):
    return self._synchronous

  @property
  def num_replicas(self):
    return self.n


def linear_model_fn(seen):
  def model_fn(features, labels, mode, params):
    seen["learning_rate"] = params["learning_rate"]
    w = tf.compat.v1.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    if mode != TRAIN:
      return tf.estimator.EstimatorSpec(mode, loss=loss)
    opt = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=opt.minimize(loss, tf.compat.v1.train.get_global_step()))
  return model_fn


def build(model_fn, adapter, mode=TRAIN, params=None, config=None):
  """Builds `model_fn` the way Estimator would, under `adapter`; returns (graph, spec)."""
  graph = tf.Graph()
  with graph.as_default():
    tf.compat.v1.train.get_or_create_global_step()
    features, labels = tf.ones([4, 3]), tf.ones([4, 1])
    spec = adapter.wrap_model_fn(model_fn)(features, labels, mode,
                                           params or {"learning_rate": 0.1}, config)
  return graph, spec


@pytest.mark.parametrize("scaling,replicas,factor", [
    ("linear", 4, 4.0), ("sqrt", 4, 2.0), ("none", 4, 1.0), ("linear", 1, 1.0)])
def test_scale_factor(scaling, replicas, factor):
  assert decorator.scale_factor(scaling, replicas) == factor


@pytest.mark.parametrize("step,rate", [(0, 0.1), (25, 0.175), (50, 0.25), (100, 0.4),
                                       (1000, 0.4)])
def test_warmup_is_linear_from_base_to_scaled(step, rate):
  assert decorator.learning_rate_at(step, 0.1, 0.4, 100) == pytest.approx(rate)
  assert float(decorator.learning_rate_at(tf.constant(step), 0.1, 0.4, 100)) == (
      pytest.approx(rate))


@pytest.mark.parametrize("scaling,expected", [(None, 0.4), ("linear", 0.4), ("sqrt", 0.2),
                                              ("none", 0.1)])
def test_rate_is_scaled_by_synchronous_replicas(scaling, expected):
  seen = {}
  build(ed.distributed(linear_model_fn(seen), lr_scaling=scaling), Replicas(4))
  assert seen["learning_rate"] == pytest.approx(expected)


def test_asynchronous_strategy_keeps_the_rate_by_default():
  seen = {}
  build(ed.distributed(linear_model_fn(seen)), Replicas(4, synchronous=False))
  assert seen["learning_rate"] == pytest.approx(0.1)


@pytest.mark.parametrize("scaling,expected", [
    ("linear", [0.1, 0.25, 0.4, 0.4]),   # 0.1 x 4 replicas
    ("sqrt", [0.1, 0.15, 0.2, 0.2]),     # 0.1 x sqrt(4)
    ("none", [0.1, 0.1, 0.1, 0.1]),
])
def test_warmup_rate_follows_the_global_step(scaling, expected):
  seen = {}
  graph, _ = build(ed.distributed(linear_model_fn(seen), lr_scaling=scaling, warmup_steps=100),
                   Replicas(4))
  with graph.as_default(), tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    step = tf.compat.v1.train.get_global_step()
    rates = []
    for value in (0, 50, 100, 200):  # start, mid-warmup, end of warmup, after
      step.load(value, session)
      rate = seen["learning_rate"]  # a number when there is nothing to warm up to
      rates.append(session.run(rate) if tf.is_tensor(rate) else rate)
  np.testing.assert_allclose(rates, expected, rtol=1e-6)


def test_eval_gets_the_scaled_rate_as_a_number():
  seen = {}
  _, spec = build(ed.distributed(linear_model_fn(seen), warmup_steps=10), Replicas(2), EVAL)
  assert seen["learning_rate"] == pytest.approx(0.2) and spec.mode == EVAL


def test_the_chief_records_the_rate_it_scaled_in_the_model_dir(tmp_path):
  chief, worker = str(tmp_path / "chief"), str(tmp_path / "worker")
  model_fn = ed.distributed(linear_model_fn({}), warmup_steps=10)
  build(model_fn, Replicas(4), config=tf.estimator.RunConfig(model_dir=chief))
  assert rate_record.read(chief) == rate_record.RateRecord(
      base=0.1, factor=4.0, scaling="linear", replicas=4, scaled=0.1 * 4.0,
      source="params['learning_rate']", warmup_steps=10)
  # A worker scales the same rate and leaves the record to the chief.
  adapter = Replicas(4)
  adapter.task = cluster.TaskInfo(role="worker", index=0, rank=1, size=4)
  build(model_fn, adapter, config=tf.estimator.RunConfig(model_dir=worker))
  assert rate_record.read(worker) is None


def constant_rate_model_fn(optimizer_class, seen):
  """A model_fn as Horovod's Estimator example writes it: a constant rate, no params."""
  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    seen["optimizer"] = optimizer = optimizer_class(0.1)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss,
        train_op=optimizer.minimize(loss, tf.compat.v1.train.get_global_step()))
  return model_fn


@pytest.mark.parametrize("optimizer_class,rate_tensor", [
    (tf.compat.v1.train.GradientDescentOptimizer, "_learning_rate_tensor"),
    (tf.compat.v1.train.AdamOptimizer, "_lr_t"),
    (tf.compat.v1.train.MomentumOptimizer, "_learning_rate_tensor")])
def test_a_constant_rate_in_a_v1_optimizer_is_scaled_with_warmup(optimizer_class, rate_tensor):
  seen = {}
  kwargs = {"momentum": 0.9} if optimizer_class is tf.compat.v1.train.MomentumOptimizer else {}
  model_fn = constant_rate_model_fn(lambda rate: optimizer_class(rate, **kwargs), seen)
  graph, _ = build(ed.distributed(model_fn, warmup_steps=10), Replicas(4))
  optimizer = seen["optimizer"]
  assert optimizer.__dict__.get("_learning_rate", optimizer.__dict__.get("_lr")) == 0.1
  with graph.as_default(), tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    step = tf.compat.v1.train.get_global_step()
    rates = []
    for value in (0, 5, 10, 20):
      session.run(step.assign(value))
      rates.append(session.run(getattr(optimizer, rate_tensor)))
  np.testing.assert_allclose(rates, [0.1, 0.25, 0.4, 0.4], rtol=1e-6)


def test_a_legacy_keras_optimizers_rate_is_scaled_with_warmup():
  """As canned Estimators build theirs: tf.keras.optimizers.legacy, in graph mode."""
  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.matmul(features, w) - labels)  # d loss / d w = 1
    optimizer = tf.keras.optimizers.legacy.SGD(0.1)
    train_op = optimizer.apply_gradients(zip(tf.gradients(loss, [w]), [w]))
    step = tf.compat.v1.train.get_global_step()
    with tf.control_dependencies([train_op]):  # The step moves once the rate was read.
      train_op = step.assign_add(1)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
  graph, spec = build(ed.distributed(model_fn, warmup_steps=10), Replicas(4))
  with graph.as_default(), tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    w = tf.compat.v1.global_variables("w")[0]
    moved = []
    for _ in range(2):
      before = session.run(w)[0, 0]
      session.run(spec.train_op)
      moved.append(before - session.run(w)[0, 0])
    tf.compat.v1.train.get_global_step().load(10, session)
    before = session.run(w)[0, 0]
    session.run(spec.train_op)
    moved.append(before - session.run(w)[0, 0])
  np.testing.assert_allclose(moved, [0.1, 0.13, 0.4], rtol=1e-5)


def test_no_rate_anywhere_is_an_error_not_a_silent_unscaled_rate():
  def model_fn(features, labels, mode, params):
    del params
    w = tf.compat.v1.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    step = tf.compat.v1.train.get_global_step()
    train_op = tf.group(w.assign_sub(0.1 * tf.gradients(loss, w)[0]), step.assign_add(1))
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
  with pytest.raises(ed.ConfigError, match=re.escape(
      "model_fn model_fn trains on 2 replicas with linear learning-rate scaling, but no "
      "learning rate was found to scale. Looked in params['learning_rate'] (params has no "
      "'learning_rate' (its keys: ['lr'])) and in the learning rate of a tf.compat.v1.train "
      "or tf.keras.optimizers.legacy optimizer applied in the model_fn (none was).")):
    build(ed.distributed(model_fn), Replicas(2), params={"lr": 0.1})
  # Unscaled on purpose, or nothing to scale: the model trains at its own rate.
  for decorated, replicas in ((ed.distributed(model_fn, lr_scaling="none"), 2),
                              (ed.distributed(model_fn), 1)):
    _, spec = build(decorated, Replicas(replicas), params={"lr": 0.1})
    assert spec.train_op is not None


def test_a_rate_in_params_is_not_scaled_again_in_the_optimizer():
  seen = {}
  graph, _ = build(ed.distributed(linear_model_fn(seen)), Replicas(2))
  with graph.as_default(), tf.compat.v1.Session() as session:
    rate = graph.get_tensor_by_name("GradientDescent/learning_rate:0")
    assert session.run(rate) == pytest.approx(0.2)


def test_lr_param_names_the_key():
  seen = {}

  def model_fn(features, labels, mode, params):
    return linear_model_fn(seen)(features, labels, mode, {"learning_rate": params["base_lr"]})
  build(ed.distributed(model_fn, lr_param="base_lr"), Replicas(3), params={"base_lr": 0.1})
  assert seen["learning_rate"] == pytest.approx(0.3)


@pytest.mark.parametrize("signature,message", [
    ("features, labels, mode, hparams", r"needs \['hparams'\], which Estimator cannot pass"),
    ("labels, mode", r"no `features`; Estimator requires it"),
    ("features, labels, mode, hparams=None, *, depth", r"needs \['depth'\]"),
])
def test_model_fn_estimator_would_reject_fails_at_decoration(signature, message):
  namespace = {}
  exec(f"def model_fn({signature}):\n  pass", namespace)  # pylint: disable=exec-used
  with pytest.raises(ed.ConfigError, match=message):
    ed.distributed(namespace["model_fn"])


def test_a_model_fn_whose_other_arguments_have_defaults_gets_only_estimators():
  seen = {}

  def model_fn(features, labels, mode, params, hparams=None):
    seen["hparams"] = hparams
    return linear_model_fn({})(features, labels, mode, params)
  _, spec = build(ed.distributed(model_fn), Replicas(1), params={"learning_rate": 0.1})
  assert seen == {"hparams": None} and spec.train_op is not None


@pytest.mark.parametrize("options,message", [
    ({"lr_scaling": "cubic"}, r"lr_scaling \('cubic'\) must be one of linear, sqrt, none"),
    ({"warmup_steps": -1}, r"warmup_steps \(-1\) must be a non-negative integer"),
])
def test_bad_options_fail_at_decoration(options, message):
  with pytest.raises(ed.ConfigError, match=message):
    ed.distributed(**options)(linear_model_fn({}))


def test_subset_signatures_get_only_their_arguments():
  seen = {}

  def model_fn(features, mode):
    seen["mode"] = mode
    return linear_model_fn({})(features, tf.ones([4, 1]), mode, {"learning_rate": 0.1})
  _, spec = build(ed.distributed(model_fn, lr_scaling="none"), Replicas(1))
  assert seen == {"mode": TRAIN} and spec.train_op is not None


def test_program_options_override_the_decorators_and_keep_its_key():
  model_fn = ed.distributed(linear_model_fn({}), lr_scaling="sqrt", warmup_steps=5,
                            lr_param="base_lr")
  redecorated, options = decorator.decorated(model_fn, lr_scaling="linear")
  assert options == rate_options.RateOptions(lr_scaling="linear", warmup_steps=5,
                                             lr_param="base_lr")
  # Decorating again wraps the user's function, not the decorated one.
  _, again = decorator.decorated(redecorated)
  assert again == options


def test_outside_any_adapter_the_model_fn_is_one_process():
  seen = {}
  graph = tf.Graph()
  with graph.as_default():
    tf.compat.v1.train.get_or_create_global_step()
    ed.distributed(linear_model_fn(seen))(tf.ones([4, 3]), tf.ones([4, 1]), TRAIN,
                                          {"learning_rate": 0.1}, None)
  assert seen["learning_rate"] == pytest.approx(0.1)


def allreduce_ops(graph):
  """Ops that Horovod's DistributedOptimizer builds for its all-reduce (folded at size 1)."""
  return [op.name for op in graph.get_operations() if "_Allreduce" in op.name]


def test_horovod_all_reduces_any_v1_optimizer_and_broadcasts():
  adapter = ed.create_strategy("horovod", task=ed.TaskInfo("chief", 0, 0, 2))
  graph, spec = build(ed.distributed(linear_model_fn({})), adapter)
  assert allreduce_ops(graph)
  assert all(name.startswith("DistributedGradientDescentOptimizer_Allreduce")
             for name in allreduce_ops(graph))
  assert any(type(h).__name__ == "BroadcastGlobalVariablesHook" for h in spec.training_hooks)
  # The routing lives only while the model_fn builds its graph.
  assert tf.compat.v1.train.Optimizer.compute_gradients is (
      tf.compat.v1.train.Optimizer.__dict__["compute_gradients"])
  assert "estimator_dist" not in tf.compat.v1.train.Optimizer.compute_gradients.__module__


def test_one_horovod_rank_neither_all_reduces_nor_broadcasts():
  graph, spec = build(ed.distributed(linear_model_fn({})), ed.create_strategy("horovod"))
  assert not allreduce_ops(graph)
  assert not any(type(h).__name__ == "BroadcastGlobalVariablesHook" for h in spec.training_hooks)


def test_horovod_does_not_wrap_an_optimizer_twice():
  import horovod.tensorflow as hvd  # pylint: disable=g-import-not-at-top

  def model_fn(features, labels, mode, params):
    w = tf.compat.v1.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.AdamOptimizer(params["learning_rate"]))
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=opt.minimize(loss, tf.compat.v1.train.get_global_step()))
  graph, _ = build(ed.distributed(model_fn), ed.create_strategy("horovod"))
  names = allreduce_ops(graph)
  assert names and all(n.startswith("DistributedAdamOptimizer_Allreduce/") for n in names)


def test_a_rate_the_program_scaled_for_its_own_horovod_optimizer_is_not_scaled_again():
  """Horovod's Estimator example: MomentumOptimizer(0.001 * hvd.size()) wrapped in its own
  hvd.DistributedOptimizer, no params: the rate stays 0.002 on 2 ranks (not 0.004)."""
  import horovod.tensorflow as hvd  # pylint: disable=g-import-not-at-top

  def momentum_model_fn(wrap):
    def model_fn(features, labels, mode):
      w = tf.compat.v1.get_variable("w", [3, 1])
      loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
      optimizer = wrap(tf.compat.v1.train.MomentumOptimizer(learning_rate=0.002, momentum=0.9))
      return tf.estimator.EstimatorSpec(
          mode, loss=loss, train_op=optimizer.minimize(loss, tf.compat.v1.train.get_global_step()))
    return model_fn

  def rates(graph):
    applies = [op for op in graph.get_operations() if "ApplyMomentum" in op.type]
    assert applies
    return {round(float(tf.get_static_value(op.inputs[2])), 6) for op in applies}
  adapter = ed.create_strategy("horovod", task=ed.TaskInfo("chief", 0, 0, 2))
  graph, _ = build(ed.distributed(momentum_model_fn(hvd.DistributedOptimizer)), adapter)
  assert rates(graph) == {0.002}
  # The same optimizer without the program's wrapper: ours all-reduces it, and scales it.
  graph, _ = build(ed.distributed(momentum_model_fn(lambda optimizer: optimizer)), adapter)
  assert allreduce_ops(graph) and rates(graph) == {0.004}


def test_horovod_refuses_a_train_op_without_a_v1_optimizer():
  adapter = ed.create_strategy("horovod", task=ed.TaskInfo("chief", 0, 0, 2))

  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.matmul(features, w))
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.no_op())
  with pytest.raises(ed.ConfigError, match="no gradient would be all-reduced"):
    build(ed.distributed(model_fn, lr_scaling="none"), adapter)


def test_micro_batches_spread_the_remainder_over_the_first_ranks():
  from estimator_dist.strategies import accumulation  # pylint: disable=g-import-not-at-top
  assert accumulation.micro_batches_per_rank(320, 32, 3) == [4, 3, 3]
  assert accumulation.micro_batches_per_rank(64, 32, 2) == [1, 1]
  with pytest.raises(ed.ConfigError) as e:
    accumulation.micro_batches_per_rank(100, 32, 2)
  assert str(e.value) == ("global_batch_size (100) must be a multiple of batch_size (32), the "
                          "size of one micro-batch.")
  with pytest.raises(ed.ConfigError) as e:
    accumulation.micro_batches_per_rank(64, 32, 4)
  assert str(e.value) == (
      "global_batch_size (64) is 2 micro-batch(es) of 32, fewer than the 4 ranks; each rank "
      "needs at least one. Use a global_batch_size of at least 128 or a smaller batch_size.")
