"""The classification head the model_zoo models share."""

import tensorflow as tf

import estimator_dist as ed


def optimizer(params):
  """Momentum SGD at params['learning_rate']."""
  return tf.compat.v1.train.MomentumOptimizer(params["learning_rate"], momentum=0.9)


def train_op(optimizer_, loss):
  """`optimizer_.minimize(loss)` after the layers' update ops (batch-norm statistics)."""
  update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
  with tf.control_dependencies(update_ops):
    return optimizer_.minimize(loss, global_step=tf.compat.v1.train.get_global_step())


def classifier_spec(logits, labels, mode, params):
  """EstimatorSpec for 10-class logits, trained with `optimizer(params)`."""
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
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op(optimizer(params), loss))


def classifier_model_fn(logits_fn):
  """The decorated model_fn of `logits_fn(features, mode, params)` with this head."""
  @ed.distributed
  def model_fn(features, labels, mode, params):
    return classifier_spec(logits_fn(features, mode, params), labels, mode, params)
  model_fn.__doc__ = logits_fn.__doc__
  return model_fn
