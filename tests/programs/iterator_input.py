"""A TensorFlow 1 trainer in the shape of Cloud ML Engine's census sample, which never
imports estimator_dist: its input_fn ends in `tf.compat.v1.data.make_one_shot_iterator(
dataset).get_next()` and returns tensors, not the Dataset; with --pop_label it takes the
label out of the features dict as the census sample does (`features.pop(LABEL_COLUMN)`),
else it returns the iterator's (features, label) as they are."""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--job-dir", required=True)
parser.add_argument("--train-steps", type=int, default=40)
parser.add_argument("--pop_label", action="store_true")
args = parser.parse_args()

x = np.random.RandomState(0).rand(512, 4).astype(np.float32)
y = (x.sum(axis=1) > 2).astype(np.int64)


def input_fn(shuffle, num_epochs=None, batch_size=32):
  if args.pop_label:
    dataset = tf.data.Dataset.from_tensor_slices({"x": x, "label": y})
  else:
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
  if shuffle:
    dataset = dataset.shuffle(512, seed=0)
  dataset = dataset.repeat(num_epochs).batch(batch_size)
  if not args.pop_label:
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
  features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
  return features, tf.cast(features.pop("label"), tf.int32)


estimator = tf.estimator.LinearClassifier([tf.feature_column.numeric_column("x", shape=[4])],
                                          model_dir=args.job_dir)
train_spec = tf.estimator.TrainSpec(lambda: input_fn(True), max_steps=args.train_steps)
eval_spec = tf.estimator.EvalSpec(lambda: input_fn(False, num_epochs=1), steps=None)
tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
