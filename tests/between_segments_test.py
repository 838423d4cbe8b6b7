"""A kept PBT job's next segment: its saver, under no strategy and under MirroredStrategy."""

import os

import pytest
import tensorflow as tf

from estimator_dist.training import between_segments


def _model_fn(features, labels, mode, config):
  logits = tf.compat.v1.layers.dense(features, 1)
  loss = tf.reduce_mean(tf.square(logits - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  spec = tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
  return spec._replace(training_hooks=between_segments.saver_hooks(spec, config))


def _input_fn():
  return tf.data.Dataset.from_tensors(([[1.0]], [[2.0]])).repeat()


@pytest.mark.parametrize("mirrored", [False, True])
def test_a_next_segment_saves_its_start_no_second_time_and_trains_on(
    tmp_path, monkeypatch, mirrored):
  strategy = tf.distribute.MirroredStrategy(["/cpu:0"]) if mirrored else None
  config = tf.estimator.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=5,
                                  train_distribute=strategy)
  estimator = tf.estimator.Estimator(_model_fn, config=config)
  estimator.train(_input_fn, max_steps=5)
  started = os.stat(tmp_path / "model.ckpt-5.index").st_mtime_ns
  monkeypatch.setattr(between_segments, "_next_segment", True)
  estimator.train(_input_fn, max_steps=10)  # It trained on and saved its last step.
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-10")
  assert (tmp_path / "model.ckpt-10.meta").exists()
  # Under no strategy the start (step 5, just restored) is not saved again; under
  # MirroredStrategy, whose scaffold Estimator merges, Estimator's own saver saves it.
  assert (os.stat(tmp_path / "model.ckpt-5.index").st_mtime_ns == started) != mirrored
