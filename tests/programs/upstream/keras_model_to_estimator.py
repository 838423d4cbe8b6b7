#@title Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
# https://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""TensorFlow's "Create an Estimator from a Keras model" tutorial (an iris Sequential model
through tf.keras.estimator.model_to_estimator), as a program.

Upstream: tensorflow/docs, site/en/tutorials/estimator/keras_model_to_estimator.ipynb at
commit 60c51e7a4b34ff7e02b339b361a5bff7f091cbf8: its code cells in order, as one file
(the first is its license header).

Edits (this machine downloads nothing, and has no tensorflow_datasets):
- `import tensorflow_datasets as tfds` is left out; the iris data is read from the copy
  scikit-learn ships (its 150 flowers, in that file's order, which is not the order of
  tfds's stored examples);
- in `input_fn`, `split = tfds.Split.TRAIN` and `tfds.load('iris', split=split,
  as_supervised=True)` become a `tf.data.Dataset` of those 150 flowers with the elements
  tfds's iris gives as_supervised: (features float32[4], label int64), the label 0, 1, 2
  for setosa, versicolor, virginica as tfds's class names order them.
Nothing else changed: `model.summary()`, the cell that prints one batch, and
`model_dir = tempfile.mkdtemp()` are as upstream has them.
"""

import os

import tensorflow as tf

import numpy as np
import sklearn

iris_path = os.path.join(os.path.dirname(sklearn.__file__), "datasets", "data", "iris.csv")
iris = np.loadtxt(iris_path, delimiter=",", skiprows=1)
iris_features = iris[:, :4].astype(np.float32)
iris_labels = iris[:, 4].astype(np.int64)

model = tf.keras.models.Sequential([
    tf.keras.layers.Dense(16, activation='relu', input_shape=(4,)),
    tf.keras.layers.Dropout(0.2),
    tf.keras.layers.Dense(3)
])

model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              optimizer='adam')
model.summary()


def input_fn():
  dataset = tf.data.Dataset.from_tensor_slices((iris_features, iris_labels))
  dataset = dataset.map(lambda features, labels: ({'dense_input':features}, labels))
  dataset = dataset.batch(32).repeat()
  return dataset


for features_batch, labels_batch in input_fn().take(1):
  print(features_batch)
  print(labels_batch)

import tempfile
model_dir = tempfile.mkdtemp()
keras_estimator = tf.keras.estimator.model_to_estimator(
    keras_model=model, model_dir=model_dir)

keras_estimator.train(input_fn=input_fn, steps=500)
eval_result = keras_estimator.evaluate(input_fn=input_fn, steps=10)
print('Eval result: {}'.format(eval_result))
