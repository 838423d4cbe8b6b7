"""What both hand-written baselines share: flags, the model_fn and the session config.

The baselines are what a user writes without estimator_dist, following Horovod's and
TensorFlow's own Estimator examples; the benchmark compares the toolkit with them. Their
one addition is how the benchmark measures them: each training task beats in its job's
mailbox as the toolkit's tasks do (`beat_hooks`).
"""

import os

import tensorflow as tf
from absl import flags

from benchmarks import models
from estimator_dist.contract import cluster
from estimator_dist.training import hooks
from model_zoo import heads


def define_flags():
  flags.DEFINE_string("strategy", None, "Backend (the benchmark gives it).")
  flags.DEFINE_enum("model", "mnist_cnn", tuple(models.MODELS), "Model to train.")
  flags.DEFINE_enum("data", "synthetic", models.DATA, "Training data.")
  flags.DEFINE_string("model_dir", None, "Checkpoint directory.")
  flags.DEFINE_integer("batch_size", 64, "Batch size per worker.")
  flags.DEFINE_float("learning_rate", 0.01, "Single-worker learning rate.")
  flags.DEFINE_integer("train_steps", 200, "Steps to train.")
  flags.DEFINE_integer("intra_op_threads", 0, "TensorFlow intra-op threads.")
  flags.DEFINE_integer("inter_op_threads", 0, "TensorFlow inter-op threads.")
  flags.DEFINE_integer("num_devices", 1, "mirrored: CPU replicas.")


def session_config():
  f = flags.FLAGS
  return tf.compat.v1.ConfigProto(allow_soft_placement=True,
                                  intra_op_parallelism_threads=f.intra_op_threads,
                                  inter_op_parallelism_threads=f.inter_op_threads)


def model_fn(learning_rate_factor, wrap_optimizer=lambda opt: opt):
  """The model's TRAIN graph, its optimizer wrapped and its rate scaled by hand."""
  logits_fn = models.MODELS[flags.FLAGS.model].module.logits

  def fn(features, labels, mode, params):
    logits = logits_fn(features, mode, params)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    optimizer = tf.compat.v1.train.MomentumOptimizer(
        params["learning_rate"] * learning_rate_factor, momentum=0.9)
    return tf.estimator.EstimatorSpec(mode, loss=loss,
                                      train_op=heads.train_op(wrap_optimizer(optimizer), loss))
  return fn


def params():
  f = flags.FLAGS
  return {"batch_size": f.batch_size, "learning_rate": f.learning_rate}


def input_fn(num_shards, index):
  """This worker's shard of the training set, shuffled, repeated and batched."""
  f = flags.FLAGS
  (x, y), _ = models.load(f.model, f.data)

  def fn():
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shard(num_shards, index)
    return dataset.shuffle(len(y) // num_shards, seed=0).repeat().batch(f.batch_size)
  return fn


def beat_hooks(examples_per_step):
  """The heartbeat of this training task (none for a ps task, or outside a launcher's
  local job): the toolkit's hook, beating about once a second with the global step and the
  job's `examples_per_step`, into the mailbox the launcher gives every local job,
  instrumented or not (estimator_dist/training/hooks.py)."""
  task = (cluster.from_horovod_environment(os.environ) or
          cluster.parse_tf_config(os.environ.get("TF_CONFIG")))
  return hooks.heartbeat_hooks(task, last_step=flags.FLAGS.train_steps,
                               examples_per_step=lambda: examples_per_step)
