"""A production program's shape: an Estimator of its own, trained through estimator_dist,
then used once training returns (export, predict, evaluate again), as TensorFlowOnSpark's
MNIST Estimator example exports after train_and_evaluate.

--eval_input picks the eval input: `data` (the eval set, through a functools.partial of an
input_fn with a defaulted argument, as TensorFlow's cifar10_estimator tutorial passes it),
`empty` (a filter that drops every example), `endless` (a generator that never ends).
"""

import functools
import json
import os
import socket
import time

import numpy as np
import tensorflow as tf
from absl import flags

import estimator_dist as ed
from model_zoo import data
from tests.programs import plain_model

flags.DEFINE_enum("eval_input", "data", ["data", "empty", "endless"], "The eval input.")
flags.DEFINE_bool("then_wait_for_worker", False, "Then run an op on ps:0, which serves until "
                  "this program ends, and one on worker:0, which has exited by then: that "
                  "one waits for ever, as a session of a cluster waits for a lost peer.")
FLAGS = flags.FLAGS


def input_fn(x, y, subset, batch_size, use_distortion_for_training=True):
  del use_distortion_for_training  # Estimator never passes it: its default holds.
  dataset = tf.data.Dataset.from_tensor_slices((x, y))
  if subset == "train":
    return dataset.shuffle(len(y)).batch(batch_size)
  if FLAGS.eval_input == "empty":
    return dataset.filter(lambda _, label: label > 100).batch(batch_size)
  if FLAGS.eval_input == "endless":
    def endless():
      while True:
        yield x[0], y[0]
    return tf.data.Dataset.from_generator(endless, output_signature=(
        tf.TensorSpec(x.shape[1:], tf.float32), tf.TensorSpec([], y.dtype))).batch(batch_size)
  return dataset.batch(batch_size)


def main(_):
  options = ed.options_from_flags()
  (x, y), (x_eval, y_eval) = data.load()
  x, x_eval = x.reshape(len(x), -1), x_eval.reshape(len(x_eval), -1)
  classifier = tf.estimator.Estimator(plain_model.model_fn, model_dir=options.model_dir,
                                      params={"learning_rate": 0.01})
  train = functools.partial(input_fn, x, y, subset="train", batch_size=options.batch_size)
  evaluate = functools.partial(input_fn, x_eval, y_eval, subset="eval", batch_size=100)
  metrics = ed.train_and_evaluate(classifier, train, evaluate, options=options)
  if metrics is None:
    return
  def serving_input_receiver_fn():
    feature = tf.compat.v1.placeholder(tf.float32, [None, x.shape[1]], name="digits")
    return tf.estimator.export.TensorServingInputReceiver(feature, {"digits": feature})
  exported = classifier.export_saved_model(os.path.join(options.model_dir, "serving"),
                                           serving_input_receiver_fn)
  predicted = np.array([p for p in classifier.predict(
      lambda: tf.data.Dataset.from_tensor_slices(x_eval[:50]).batch(50))])
  again = classifier.evaluate(evaluate)
  print(f"after training: exported {exported.decode()}; predicted {len(predicted)}; "
        f"evaluated again at step {again['global_step']} accuracy {again['accuracy']:.4f} "
        f"(first {metrics['accuracy']:.4f})", flush=True)
  if FLAGS.then_wait_for_worker:
    cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
    run_on(cluster, "ps")
    print("after training: ran an op on ps:0", flush=True)
    host, port = cluster["worker"][0].rsplit(":", 1)
    while True:  # Until worker:0's program has ended.
      try:
        socket.create_connection((host, int(port)), timeout=1).close()
        time.sleep(0.2)
      except OSError:
        break
    run_on(cluster, "worker")


def run_on(cluster, job):
  """Initializes a variable on task 0 of `job` through this chief's server."""
  device = f"/job:{job}/task:0"
  with tf.Graph().as_default():
    with tf.device(device):
      variable = tf.compat.v1.get_variable(f"after_training_{job}", [1])
    config = tf.compat.v1.ConfigProto(device_filters=[device, "/job:chief/task:0"])
    with tf.compat.v1.Session(f"grpc://{cluster['chief'][0]}", config=config) as session:
      session.run(variable.initializer)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, learning_rate=0.01, train_steps=200)
  ed.run_program(main)
