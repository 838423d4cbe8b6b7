"""A program that ignores the job's cluster, as many trainers written for one machine do:
its own argparse --strategy flag, TF_CONFIG dropped, a plain Estimator trained alone. Under
the launcher every task exits 0 having trained on its own, which is no distributed job.
Each trains in a directory of its own under --model_dir: two Estimators training one
directory at once would collide on its checkpoints."""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf


def input_fn():
  x = np.random.RandomState(0).rand(64, 4).astype(np.float32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, x.sum(axis=1))).repeat().batch(16)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--strategy", default="local")
  parser.add_argument("--model_dir", default=None)
  args = parser.parse_args()
  os.environ.pop("TF_CONFIG", None)  # Trains alone, whatever the job is.
  model_dir = tempfile.mkdtemp(dir=args.model_dir) if args.model_dir else None
  estimator = tf.estimator.LinearRegressor(
      [tf.feature_column.numeric_column("x", shape=(4,))], model_dir=model_dir)
  estimator.train(input_fn, steps=5)
  print("trained alone with --strategy", args.strategy, flush=True)


if __name__ == "__main__":
  main()
