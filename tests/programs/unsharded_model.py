"""A deliberately broken setup for `estimator-dist verify`: an input_fn that takes
`input_context` (so the toolkit leaves sharding to it) but ignores it, so every worker
reads the same batches."""

from model_zoo import mnist_dnn

model_fn = mnist_dnn.model_fn


def input_fn(params, input_context=None):
  del input_context  # The bug: no dataset.shard(...).
  return mnist_dnn.input_fn(params)
