"""A program that runs Horovod itself, shaped as Horovod's own Estimator example
(examples/tensorflow/tensorflow_mnist_estimator.py): hvd.init(), its optimizer wrapped in
hvd.DistributedOptimizer at a rate it multiplies by hvd.size(), BroadcastGlobalVariablesHook,
steps divided by hvd.size(), a model_dir on rank 0 alone, numpy_input_fn. Smaller: the
digits scikit-learn ships, centred in 28x28 images, one conv layer, 400 steps in all. It
never imports estimator_dist."""

import numpy as np
import tensorflow.compat.v1 as tf
import horovod.tensorflow as hvd
from sklearn.datasets import load_digits


def cnn_model_fn(features, labels, mode):
  input_layer = tf.reshape(features["x"], [-1, 28, 28, 1])
  conv1 = tf.layers.conv2d(inputs=input_layer, filters=8, kernel_size=[5, 5], padding="same",
                           activation=tf.nn.relu)
  pool1 = tf.layers.max_pooling2d(inputs=conv1, pool_size=[2, 2], strides=2)
  logits = tf.layers.dense(inputs=tf.reshape(pool1, [-1, 14 * 14 * 8]), units=10)
  predictions = {"classes": tf.argmax(input=logits, axis=1),
                 "probabilities": tf.nn.softmax(logits, name="softmax_tensor")}
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode=mode, predictions=predictions)
  loss = tf.losses.softmax_cross_entropy(
      onehot_labels=tf.one_hot(indices=tf.cast(labels, tf.int32), depth=10), logits=logits)
  if mode == tf.estimator.ModeKeys.TRAIN:
    # Horovod: scale learning rate by the number of workers.
    optimizer = tf.train.MomentumOptimizer(learning_rate=0.001 * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer)
    train_op = optimizer.minimize(loss=loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)
  return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops={
      "accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions["classes"])})


def main(unused_argv):
  hvd.init()
  digits = load_digits()
  images = np.zeros((len(digits.images), 28, 28), np.float32)
  images[:, 10:18, 10:18] = digits.images / 16.0
  train_data, eval_data = images[:1500].reshape(-1, 784), images[1500:].reshape(-1, 784)
  train_labels, eval_labels = digits.target[:1500], digits.target[1500:]
  # Horovod: save checkpoints only on worker 0.
  model_dir = "./mnist_convnet_model" if hvd.rank() == 0 else None
  classifier = tf.estimator.Estimator(model_fn=cnn_model_fn, model_dir=model_dir)
  train_input_fn = tf.estimator.inputs.numpy_input_fn(
      x={"x": train_data}, y=train_labels, batch_size=100, num_epochs=None, shuffle=True)
  # Horovod: adjust number of steps based on number of workers.
  classifier.train(input_fn=train_input_fn, steps=400 // hvd.size(),
                   hooks=[hvd.BroadcastGlobalVariablesHook(0)])
  eval_input_fn = tf.estimator.inputs.numpy_input_fn(
      x={"x": eval_data}, y=eval_labels, num_epochs=1, shuffle=False)
  print("eval results", classifier.evaluate(input_fn=eval_input_fn), flush=True)


if __name__ == "__main__":
  tf.app.run()
