"""A trainer in the shape of Cloud ML Engine's samples, which never imports estimator_dist:
its own argparse flags (--job-dir), rounds of `train()` and `evaluate()` on a
LinearClassifier in a model_dir of its own, then `export_saved_model()`, which it loads
and predicts with. Each task prints what its calls returned. --extra-round-on=ROLE makes
that task (chief, or worker 0) train one round more than the others before the export,
as a program whose loop length differs between tasks would; --no-export ends the program
after its rounds. --one-pass trains each round without steps, until the input ends (one
pass over it), as TensorFlow's official r1 MNIST loop does; with --endless its input
repeats for ever."""

import argparse
import json
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--job-dir", required=True)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--steps-per-round", type=int, default=40)
parser.add_argument("--extra-round-on", choices=["chief", "worker"], default=None)
parser.add_argument("--no-export", action="store_true")
parser.add_argument("--one-pass", action="store_true")
parser.add_argument("--endless", action="store_true")
args = parser.parse_args()

x = np.random.RandomState(0).rand(512, 4).astype(np.float32)
y = (x.sum(axis=1) > 2).astype(np.int32)
columns = [tf.feature_column.numeric_column("x", shape=[4])]


def train_input_fn():
  dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).shuffle(512)
  return (dataset if args.one_pass and not args.endless else dataset.repeat()).batch(32)


def eval_input_fn():
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(128)


estimator = tf.estimator.LinearClassifier(columns, model_dir=os.path.join(args.job_dir, "model"))
for number in range(args.rounds):
  if args.one_pass:
    estimator.train(train_input_fn)
  else:
    estimator.train(train_input_fn, steps=args.steps_per_round)
  metrics = estimator.evaluate(eval_input_fn)
  print(f"round {number}: step {metrics['global_step']} accuracy {metrics['accuracy']:.4f}",
        flush=True)
if json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("type") == (
    args.extra_round_on):
  estimator.train(train_input_fn, steps=args.steps_per_round)
if args.no_export:
  raise SystemExit(0)



def serving_input_fn():
  inputs = {"x": tf.compat.v1.placeholder(tf.float32, [None, 4])}
  return tf.estimator.export.ServingInputReceiver(inputs, inputs)


path = estimator.export_saved_model(os.path.join(args.job_dir, "export"), serving_input_fn)
predict = tf.saved_model.load(path).signatures["predict"]
classes = predict(x=tf.constant(x[:8]))["class_ids"].numpy().ravel().tolist()
print(f"exported {path.decode()} predicts {classes} for {y[:8].tolist()}", flush=True)
