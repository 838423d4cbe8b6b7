"""The classification head the model_zoo models share."""

import tensorflow as tf


def classifier_spec(logits, labels, mode, params):
  """EstimatorSpec for 10-class logits, trained with momentum SGD at params['learning_rate']."""
  classes = tf.argmax(logits, axis=1)
  predictions = {"classes": classes, "probabilities": tf.nn.softmax(logits)}
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(
        mode, predictions=predictions,
        export_outputs={"classify": tf.estimator.export.PredictOutput(predictions)})
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    accuracy = tf.compat.v1.metrics.accuracy(labels=labels, predictions=classes)
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
  optimizer = tf.compat.v1.train.MomentumOptimizer(params["learning_rate"], momentum=0.9)
  train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
