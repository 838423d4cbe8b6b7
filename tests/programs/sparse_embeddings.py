"""Two embedding columns of one shape whose sparse gradients differ in length between
workers (values out of the vocabulary are dropped): TensorFlow's gather of such gradients
fails in an Estimator's graph under the collective strategies, which all-reduce them
dense instead (strategies/sparse_gradients.py). Fixed data, no shuffle: `verify` compares
the distributed run with one worker's."""

import numpy as np
import tensorflow as tf

VOCABULARY = ["a", "b", "c", "d", "e", "f"]
_POOL = np.array(VOCABULARY + ["x", "y", "z"])
_RNG = np.random.RandomState(0)
A, B = _POOL[_RNG.randint(0, 9, size=2000)], _POOL[_RNG.randint(0, 9, size=2000)]
LABELS = (np.isin(A, ["a", "b"]) | np.isin(B, ["c"])).astype(np.int64)


def input_fn():
  return tf.data.Dataset.from_tensor_slices(({"a": A, "b": B}, LABELS)).repeat().batch(20)


columns = [tf.feature_column.embedding_column(
    tf.feature_column.categorical_column_with_vocabulary_list(name, VOCABULARY), 4)
           for name in ("a", "b")]
estimator = tf.estimator.DNNClassifier([8], columns, optimizer="SGD")
estimator.train(input_fn, max_steps=50)
