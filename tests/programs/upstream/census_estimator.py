# Copyright 2016 Google LLC
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Cloud ML Engine's census trainer (a canned wide & deep Estimator), as one program that
never imports estimator_dist. Its input_fn returns the (features, labels) tensors of a
one-shot iterator's `get_next()`, not a Dataset.

Upstream: GoogleCloudPlatform/cloudml-samples at commit
3d36c8808945e8e1cacc58afed11f9aa3eb26c42 ("Fix flake8 errors", 2020-02-27), which last
changed each of these files, concatenated in dependency order (the imports between them
removed), each under its own license header:
  census/estimator/constants/constants.py
  census/estimator/trainer/featurizer.py
  census/estimator/trainer/input.py
  census/estimator/trainer/model.py
  census/estimator/trainer/task.py      (run as `python -m trainer.task`; its header is
                                         this file's)
This is the newest version of census/estimator/trainer (upstream's requirements.txt:
tensorflow>=1.15,<2); no later commit touches it.

Edits, each marked "Edit:" where it is made:
- `import tensorflow as tf` is `import tensorflow.compat.v1 as tf`: TensorFlow 2.15 has the
  TF1 names upstream uses (tf.decode_csv, tf.placeholder, tf.parse_example, tf.ConfigProto,
  tf.logging, and the Dataset.make_one_shot_iterator of TF1 datasets) only under
  tf.compat.v1;
- tf.contrib is gone: `tf.contrib.lookup.index_table_from_tensor(...)` is
  `lookup_ops.index_table_from_tensor(...)`, the TensorFlow function it called (with the
  same defaults: no OOV buckets, default_value -1);
- one file: the modules' own prefixes (`constants.`, `featurizer.`, `input_module.`,
  `model.`) are dropped, and model.py's `from __future__` imports, which must come first,
  are at the top of the file;
- this machine downloads nothing and has no GCS: `--train-files` and `--eval-files`
  default to None instead of upstream's gs://cloud-samples-data/ml-engine/census/data/
  adult.data.csv and adult.test.csv, and when either is not given,
  `write_synthetic_census` writes deterministic census-like files in their place (4000
  training rows, 1000 evaluation rows, in a temporary directory removed at exit): the
  same 15 columns and types in upstream's format ("39, State-gov, 77516, ..."),
  categorical values from upstream's vocabularies (featurizer.py's; for the hashed
  occupation and native_country, census/tf-keras/trainer/util.py's at the same commit),
  and a label that is a function of three columns: ' >50K' exactly when marital_status
  is ' Married-civ-spouse' and education_num >= 10, or capital_gain >= 5000 (31% of the
  evaluation rows; 24% of the real data's are);
- `--train-steps` defaults to 1000, the value upstream's own census/estimator/scripts/
  train-local.sh passes, instead of 100: at 100 steps of 40 rows this wide & deep model
  (its DNN takes the raw, unscaled age, hours and capital columns) is barely above the
  majority class (accuracy 0.73-0.75 against 0.689), at 1000 at 0.84-0.92; the 900 more
  steps take about 2 s on one task.
Upstream's other defaults are kept: --eval-steps 100, --train-batch-size 40, --job-dir
/tmp/census-estimator. Its final evaluation is logged by train_and_evaluate ("Saving dict
for global step ...").
"""

# Edit: model.py's `from __future__` imports, which must come first in a file.
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function


# ---------------------------------------------------------------------------------------
# census/estimator/constants/constants.py
# ---------------------------------------------------------------------------------------
#!/bin/bash
# Copyright 2018 Google Inc. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Constants shared by preprocessing and modeling scripts."""


# Define the format of your input data as present in the CSV file

CSV_COLUMNS = [
    'age', 'workclass', 'fnlwgt', 'education', 'education_num',
    'marital_status', 'occupation', 'relationship', 'race', 'gender',
    'capital_gain', 'capital_loss', 'hours_per_week', 'native_country',
    'income_bracket'
]

CSV_COLUMN_DEFAULTS = [[0], [''], [0], [''], [0], [''], [''], [''], [''],
                       [''], [0], [0], [0], [''], ['']]

LABEL_COLUMN = 'income_bracket'

LABELS = [' <=50K', ' >50K']


# ---------------------------------------------------------------------------------------
# census/estimator/trainer/featurizer.py
# ---------------------------------------------------------------------------------------
# Copyright 2016 Google Inc. All Rights Reserved. Licensed under the Apache
# License, Version 2.0 (the "License"); you may not use this file except in
# compliance with the License. You may obtain a copy of the License at
# http://www.apache.org/licenses/LICENSE-2.0

# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations under
# the License.
"""Defines a Wide + Deep model for classification on structured data.
Tutorial on wide and deep: https://www.tensorflow.org/tutorials/wide_and_deep/
"""

# Edit: TF1 names under TensorFlow 2.15.
import tensorflow.compat.v1 as tf

# Define the initial ingestion of each feature used by your model.
# Additionally, provide metadata about the feature.
INPUT_COLUMNS = [
    # Categorical base columns

    # For categorical columns with known values we can provide lists
    # of values ahead of time.
    tf.feature_column.categorical_column_with_vocabulary_list(
        'gender', [' Female', ' Male']),
    tf.feature_column.categorical_column_with_vocabulary_list(
        'race', [
            ' Amer-Indian-Eskimo', ' Asian-Pac-Islander', ' Black', ' Other',
            ' White'
        ]),
    tf.feature_column.categorical_column_with_vocabulary_list(
        'education', [
            ' Bachelors', ' HS-grad', ' 11th', ' Masters', ' 9th',
            ' Some-college', ' Assoc-acdm', ' Assoc-voc', ' 7th-8th',
            ' Doctorate', ' Prof-school', ' 5th-6th', ' 10th', ' 1st-4th',
            ' Preschool', ' 12th'
        ]),
    tf.feature_column.categorical_column_with_vocabulary_list(
        'marital_status', [
            ' Married-civ-spouse', ' Divorced', ' Married-spouse-absent',
            ' Never-married', ' Separated', ' Married-AF-spouse', ' Widowed'
        ]),
    tf.feature_column.categorical_column_with_vocabulary_list(
        'relationship', [
            ' Husband', ' Not-in-family', ' Wife', ' Own-child', ' Unmarried',
            ' Other-relative'
        ]),
    tf.feature_column.categorical_column_with_vocabulary_list(
        'workclass', [
            ' Self-emp-not-inc', ' Private', ' State-gov', ' Federal-gov',
            ' Local-gov', ' ?', ' Self-emp-inc', ' Without-pay', ' Never-worked'
        ]),

    # For columns with a large number of values, or unknown values
    # We can use a hash function to convert to categories.
    tf.feature_column.categorical_column_with_hash_bucket(
        'occupation', hash_bucket_size=100, dtype=tf.string),
    tf.feature_column.categorical_column_with_hash_bucket(
        'native_country', hash_bucket_size=100, dtype=tf.string),

    # Continuous base columns.
    tf.feature_column.numeric_column('age'),
    tf.feature_column.numeric_column('education_num'),
    tf.feature_column.numeric_column('capital_gain'),
    tf.feature_column.numeric_column('capital_loss'),
    tf.feature_column.numeric_column('hours_per_week'),
]


def get_deep_and_wide_columns(embedding_size=8):
    """Creates deep and wide feature_column lists.
    Args:
        embedding_size: (int), the number of dimensions used to represent
        categorical features when providing them as inputs to the DNN.
    Returns:
        [tf.feature_column],[tf.feature_column]: deep and wide feature_column
            lists.
    """

    (gender, race, education, marital_status, relationship, workclass,
     occupation,
     native_country, age, education_num, capital_gain, capital_loss,
     hours_per_week) = INPUT_COLUMNS

    # Reused Transformations.
    # Continuous columns can be converted to categorical via bucketization
    age_buckets = tf.feature_column.bucketized_column(
        age, boundaries=[18, 25, 30, 35, 40, 45, 50, 55, 60, 65])

    # Wide columns and deep columns.
    wide_columns = [
        # Interactions between different categorical features can also
        # be added as new virtual features.
        tf.feature_column.crossed_column(['education', 'occupation'],
                                         hash_bucket_size=int(1e4)),
        tf.feature_column.crossed_column([age_buckets, race, 'occupation'],
                                         hash_bucket_size=int(1e6)),
        tf.feature_column.crossed_column(['native_country', 'occupation'],
                                         hash_bucket_size=int(1e4)),
        gender,
        native_country,
        education,
        occupation,
        workclass,
        marital_status,
        relationship,
        age_buckets,
    ]

    deep_columns = [
        # Use indicator columns for low dimensional vocabularies
        tf.feature_column.indicator_column(workclass),
        tf.feature_column.indicator_column(education),
        tf.feature_column.indicator_column(marital_status),
        tf.feature_column.indicator_column(gender),
        tf.feature_column.indicator_column(relationship),
        tf.feature_column.indicator_column(race),

        # Use embedding columns for high dimensional vocabularies
        tf.feature_column.embedding_column(
            native_country, dimension=embedding_size),
        tf.feature_column.embedding_column(
            occupation, dimension=embedding_size),
        age,
        education_num,
        capital_gain,
        capital_loss,
        hours_per_week,
    ]

    return deep_columns, wide_columns


# ---------------------------------------------------------------------------------------
# census/estimator/trainer/input.py
# ---------------------------------------------------------------------------------------
# Copyright 2016 Google Inc. All Rights Reserved. Licensed under the Apache
# License, Version 2.0 (the "License"); you may not use this file except in
# compliance with the License. You may obtain a copy of the License at
# http://www.apache.org/licenses/LICENSE-2.0

# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations under
# the License.
"""Defines a Wide + Deep model for classification on structured data.

Tutorial on wide and deep: https://www.tensorflow.org/tutorials/wide_and_deep/
"""

import multiprocessing
# Edit: TF1 names under TensorFlow 2.15.
import tensorflow.compat.v1 as tf
# Edit: tf.contrib is gone; tf.contrib.lookup.index_table_from_tensor called this module's.
from tensorflow.python.ops import lookup_ops

# Edit: `from constants import constants` and `import trainer.featurizer as featurizer`
# removed (one file).


def _decode_csv(line):
    """Takes the string input tensor and returns a dict of rank-2 tensors."""

    # Takes a rank-1 tensor and converts it into rank-2 tensor
    # Example if the data is ['csv,line,1', 'csv,line,2', ..] to
    # [['csv,line,1'], ['csv,line,2']] which after parsing will result in a
    # tuple of tensors: [['csv'], ['csv']], [['line'], ['line']], [[1], [2]]
    row_columns = tf.expand_dims(line, -1)
    # Edit: `constants.` and `featurizer.` prefixes dropped below (one file).
    columns = tf.decode_csv(
        row_columns, record_defaults=CSV_COLUMN_DEFAULTS)
    features = dict(zip(CSV_COLUMNS, columns))

    # Remove unused columns
    unused_columns = set(CSV_COLUMNS) - {col.name for col in
                                                   INPUT_COLUMNS} - {
                         LABEL_COLUMN}
    for col in unused_columns:
        features.pop(col)
    return features


def _parse_label_column(label_string_tensor):
    """Parses a string tensor into the label tensor.

    Args:
      label_string_tensor: Tensor of dtype string. Result of parsing the CSV
        column specified by LABEL_COLUMN.

    Returns:
      A Tensor of the same shape as label_string_tensor, should return
      an int64 Tensor representing the label index for classification tasks,
      and a float32 Tensor representing the value for a regression task.
    """
    # Build a Hash Table inside the graph
    # Edit: was tf.contrib.lookup.index_table_from_tensor; `constants.` dropped.
    table = lookup_ops.index_table_from_tensor(
        tf.constant(LABELS))

    # Use the hash table to convert string labels to ints and one-hot encode
    return table.lookup(label_string_tensor)


def input_fn(filenames,
             num_epochs=None,
             shuffle=True,
             skip_header_lines=0,
             batch_size=200,
             num_parallel_calls=None,
             prefetch_buffer_size=None):
    """Generates features and labels for training or evaluation.

    This uses the input pipeline based approach using file name queue
    to read data so that entire data is not loaded in memory.

    Args:
        filenames: [str] A List of CSV file(s) to read data from.
        num_epochs: (int) how many times through to read the data. If None will
          loop through data indefinitely
        shuffle: (bool) whether or not to randomize the order of data. Controls
          randomization of both file order and line order within files.
        skip_header_lines: (int) set to non-zero in order to skip header
        lines in CSV files.
        batch_size: (int) First dimension size of the Tensors returned by
        input_fn

    Returns:
        A (features, indices) tuple where features is a dictionary of
          Tensors, and indices is a single Tensor of label indices.
    """
    if num_parallel_calls is None:
        num_parallel_calls = multiprocessing.cpu_count()

    if prefetch_buffer_size is None:
        prefetch_buffer_size = 1024

    dataset = tf.data.TextLineDataset(filenames).skip(skip_header_lines).map(
        _decode_csv, num_parallel_calls).prefetch(prefetch_buffer_size)

    if shuffle:
        dataset = dataset.shuffle(buffer_size=batch_size * 10)
    iterator = dataset.repeat(num_epochs).batch(
        batch_size).make_one_shot_iterator()
    features = iterator.get_next()
    # Edit: `constants.` prefix dropped (one file).
    return features, _parse_label_column(features.pop(LABEL_COLUMN))


# ************************************************************************
# YOU NEED NOT MODIFY ANYTHING BELOW HERE TO ADAPT THIS MODEL TO YOUR DATA
# ************************************************************************


def csv_serving_input_fn():
    """Build the serving inputs."""
    csv_row = tf.placeholder(shape=[None], dtype=tf.string)
    features = _decode_csv(csv_row)
    features.pop(LABEL_COLUMN)  # Edit: `constants.` prefix dropped (one file).
    return tf.estimator.export.ServingInputReceiver(features,
                                                    {'csv_row': csv_row})


def example_serving_input_fn():
    """Build the serving inputs."""
    example_bytestring = tf.placeholder(
        shape=[None],
        dtype=tf.string,
    )
    features = tf.parse_example(
        example_bytestring,
        # Edit: `featurizer.` prefix dropped (one file).
        tf.feature_column.make_parse_example_spec(INPUT_COLUMNS))
    return tf.estimator.export.ServingInputReceiver(
        features, {'example_proto': example_bytestring})


# [START serving-function]
def json_serving_input_fn():
    """Build the serving inputs."""
    inputs = {}
    for feat in INPUT_COLUMNS:  # Edit: `featurizer.` prefix dropped (one file).
        inputs[feat.name] = tf.placeholder(shape=[None], dtype=feat.dtype)

    return tf.estimator.export.ServingInputReceiver(inputs, inputs)


# [END serving-function]

SERVING_FUNCTIONS = {
    'JSON': json_serving_input_fn,
    'EXAMPLE': example_serving_input_fn,
    'CSV': csv_serving_input_fn
}


# ---------------------------------------------------------------------------------------
# census/estimator/trainer/model.py
# ---------------------------------------------------------------------------------------
# Copyright 2016 Google Inc. All Rights Reserved. Licensed under the Apache
# License, Version 2.0 (the "License"); you may not use this file except in
# compliance with the License. You may obtain a copy of the License at
# http://www.apache.org/licenses/LICENSE-2.0

# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations under
# the License.
"""Defines a Wide + Deep model for classification on structured data.

Tutorial on wide and deep: https://www.tensorflow.org/tutorials/wide_and_deep/
"""

# Edit: model.py's `from __future__` imports are at the top of the file.

# Edit: TF1 names under TensorFlow 2.15.
import tensorflow.compat.v1 as tf

# Edit: `import trainer.featurizer as featurizer` removed (one file).


def build_estimator(config, embedding_size=8, hidden_units=None):
    """Build a wide and deep model for predicting income category.

    Wide and deep models use deep neural nets to learn high level abstractions
    about complex features or interactions between such features.
    These models then combined the outputs from the DNN with a linear regression
    performed on simpler features. This provides a balance between power and
    speed that is effective on many structured data problems.

    You can read more about wide and deep models here:
    https://research.googleblog.com/2016/06/wide-deep-learning-better
    -together-with.html

    To define model we can use the prebuilt DNNCombinedLinearClassifier class,
    and need only define the data transformations particular to our dataset, and
    then
    assign these (potentially) transformed features to either the DNN, or linear
    regression portion of the model.

    Args:
      config: (tf.contrib.learn.RunConfig) defining the runtime environment for
        the estimator (including model_dir).
      embedding_size: (int), the number of dimensions used to represent
        categorical features when providing them as inputs to the DNN.
      hidden_units: [int], the layer sizes of the DNN (input layer first)

    Returns:
      A DNNCombinedLinearClassifier
    """

    # Edit: `featurizer.` prefix dropped (one file).
    (deep_columns, wide_columns) = get_deep_and_wide_columns(
        embedding_size)

    return tf.estimator.DNNLinearCombinedClassifier(
        config=config,
        linear_feature_columns=wide_columns,
        dnn_feature_columns=deep_columns,
        dnn_hidden_units=hidden_units or [100, 70, 50, 25])


# ---------------------------------------------------------------------------------------
# census/estimator/trainer/task.py (its license header is this file's, above)
# ---------------------------------------------------------------------------------------
"""Runs the training of the Wide & Deep model based on hyperparameter
values received as input parameters.
"""

import argparse
import json
import os

# Edit: TF1 names under TensorFlow 2.15.
import tensorflow.compat.v1 as tf

# Edit: `import trainer.input as input_module` and `import trainer.model as model`
# removed (one file).

# Edit: local data (see write_synthetic_census).
import atexit
import random
import shutil
import tempfile


def _get_session_config_from_env_var():
    """Returns a tf.ConfigProto instance that has appropriate device_filters
    set."""

    tf_config = json.loads(os.environ.get('TF_CONFIG', '{}'))

    # Master should only communicate with itself and ps
    if (tf_config and 'task' in tf_config and 'type' in tf_config[
            'task'] and 'index' in tf_config['task']):
        if tf_config['task']['type'] == 'master':
            return tf.ConfigProto(device_filters=['/job:ps', '/job:master'])
        # Worker should only communicate with itself and ps
        elif tf_config['task']['type'] == 'worker':
            return tf.ConfigProto(device_filters=[
                '/job:ps',
                '/job:worker/task:%d' % tf_config['task']['index']
            ])
    return None


def train_and_evaluate(args):
    """Run the training and evaluate using the high level API."""

    def train_input():
        """Input function returning batches from the training
        data set from training.
        """
        # Edit: `input_module.` prefix dropped (one file).
        return input_fn(
            args.train_files,
            num_epochs=args.num_epochs,
            batch_size=args.train_batch_size,
            num_parallel_calls=args.num_parallel_calls,
            prefetch_buffer_size=args.prefetch_buffer_size)

    def eval_input():
        """Input function returning the entire validation data
        set for evaluation. Shuffling is not required.
        """
        # Edit: `input_module.` prefix dropped (one file).
        return input_fn(
            args.eval_files,
            batch_size=args.eval_batch_size,
            shuffle=False,
            num_parallel_calls=args.num_parallel_calls,
            prefetch_buffer_size=args.prefetch_buffer_size)

    train_spec = tf.estimator.TrainSpec(
        train_input, max_steps=args.train_steps)

    exporter = tf.estimator.FinalExporter(
        # Edit: `input_module.` prefix dropped (one file).
        'census', SERVING_FUNCTIONS[args.export_format])
    eval_spec = tf.estimator.EvalSpec(
        eval_input,
        steps=args.eval_steps,
        exporters=[exporter],
        name='census-eval')

    run_config = tf.estimator.RunConfig(
        session_config=_get_session_config_from_env_var())
    run_config = run_config.replace(model_dir=args.job_dir)
    print('Model dir %s' % run_config.model_dir)
    # Edit: `model.` prefix dropped (one file).
    estimator = build_estimator(
        embedding_size=args.embedding_size,
        # Construct layers sizes with exponential decay
        hidden_units=[
            max(2, int(args.first_layer_size * args.scale_factor ** i))
            for i in range(args.num_layers)
        ],
        config=run_config)

    tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)


# Edit: this machine downloads nothing and has no GCS, so the census files upstream reads
# from gs://cloud-samples-data/ml-engine/census/data/ are replaced by synthetic ones.
# featurizer.py hashes occupation and native_country and lists none of their values;
# these are upstream's census/tf-keras/trainer/util.py's (_CATEGORICAL_TYPES).
_OCCUPATIONS = [
    'Adm-clerical', 'Armed-Forces', 'Craft-repair', 'Exec-managerial',
    'Farming-fishing', 'Handlers-cleaners', 'Machine-op-inspct',
    'Other-service', 'Priv-house-serv', 'Prof-specialty', 'Protective-serv',
    'Sales', 'Tech-support', 'Transport-moving'
]
_NATIVE_COUNTRIES = [
    'Cambodia', 'Canada', 'China', 'Columbia', 'Cuba', 'Dominican-Republic',
    'Ecuador', 'El-Salvador', 'England', 'France', 'Germany', 'Greece',
    'Guatemala', 'Haiti', 'Holand-Netherlands', 'Honduras', 'Hong',
    'Hungary',
    'India', 'Iran', 'Ireland', 'Italy', 'Jamaica', 'Japan', 'Laos',
    'Mexico',
    'Nicaragua', 'Outlying-US(Guam-USVI-etc)', 'Peru', 'Philippines',
    'Poland',
    'Portugal', 'Puerto-Rico', 'Scotland', 'South', 'Taiwan', 'Thailand',
    'Trinadad&Tobago', 'United-States', 'Vietnam', 'Yugoslavia'
]
# The census' education_num of each education.
_EDUCATION_NUM = {
    ' Preschool': 1, ' 1st-4th': 2, ' 5th-6th': 3, ' 7th-8th': 4, ' 9th': 5,
    ' 10th': 6, ' 11th': 7, ' 12th': 8, ' HS-grad': 9, ' Some-college': 10,
    ' Assoc-voc': 11, ' Assoc-acdm': 12, ' Bachelors': 13, ' Masters': 14,
    ' Prof-school': 15, ' Doctorate': 16
}
# Roughly the census' frequencies (a value not named here weighs 1).
_WEIGHTS = {
    'workclass': {' Private': 70, ' Self-emp-not-inc': 8, ' Local-gov': 6,
                  ' State-gov': 4, ' Self-emp-inc': 3, ' Federal-gov': 3,
                  ' ?': 5, ' Without-pay': 0.3, ' Never-worked': 0.2},
    'education': {' HS-grad': 32, ' Some-college': 22, ' Bachelors': 16,
                  ' Masters': 5, ' Assoc-voc': 4, ' 11th': 4,
                  ' Assoc-acdm': 3, ' 10th': 3, ' 7th-8th': 2,
                  ' Prof-school': 2, ' 9th': 1.5, ' 12th': 1.3,
                  ' Doctorate': 1.3, ' 5th-6th': 1, ' 1st-4th': 0.5,
                  ' Preschool': 0.2},
    'marital_status': {' Married-civ-spouse': 46, ' Never-married': 33,
                       ' Divorced': 14, ' Separated': 3, ' Widowed': 3,
                       ' Married-spouse-absent': 1, ' Married-AF-spouse': 0.1},
    'race': {' White': 85, ' Black': 10, ' Asian-Pac-Islander': 3,
             ' Amer-Indian-Eskimo': 1, ' Other': 1},
    'relationship': {' Not-in-family': 45, ' Own-child': 30, ' Unmarried': 20,
                     ' Other-relative': 5},
}


def write_synthetic_census(directory, train_rows=4000, eval_rows=1000):
    """Edit: writes census-like adult.data.csv (`train_rows` rows) and adult.test.csv
    (`eval_rows` rows) into `directory`, the same for every call, and returns their paths.

    Rows are in upstream's format: CSV_COLUMNS in order, a space after each comma, the
    string values of featurizer.py's vocabularies, the label one of LABELS: ' >50K'
    exactly when marital_status is ' Married-civ-spouse' and education_num >= 10, or
    capital_gain >= 5000 (as the census' large gains mostly are).
    """
    vocabularies = {col.name: list(col.vocabulary_list) for col in INPUT_COLUMNS
                    if hasattr(col, 'vocabulary_list')}

    def pick(rng, name, values=None):
        values = values or vocabularies[name]
        weights = [_WEIGHTS[name].get(value, 1) for value in values]
        return rng.choices(values, weights)[0]

    def row(rng):
        marital_status = pick(rng, 'marital_status')
        if marital_status == ' Married-civ-spouse':
            relationship = ' Husband' if rng.random() < 0.87 else ' Wife'
        else:
            relationship = pick(rng, 'relationship',
                                [' Not-in-family', ' Own-child', ' Unmarried',
                                 ' Other-relative'])
        gender = {' Husband': ' Male', ' Wife': ' Female'}.get(
            relationship, ' Male' if rng.random() < 0.55 else ' Female')
        education = pick(rng, 'education')
        native_country = ('United-States' if rng.random() < 0.9
                          else rng.choice(_NATIVE_COUNTRIES))
        values = {
            'age': rng.randint(17, 80),
            'workclass': pick(rng, 'workclass'),
            'fnlwgt': rng.randint(20000, 500000),
            'education': education,
            'education_num': _EDUCATION_NUM[education],
            'marital_status': marital_status,
            'occupation': ' ' + rng.choice(_OCCUPATIONS),
            'relationship': relationship,
            'race': pick(rng, 'race'),
            'gender': gender,
            'capital_gain': (rng.randint(1000, 20000) if rng.random() < 0.08
                             else 0),
            'capital_loss': (rng.randint(500, 2500) if rng.random() < 0.05
                             else 0),
            'hours_per_week': min(99, max(1, int(rng.gauss(40, 10)))),
            'native_country': ' ' + native_country,
        }
        values[LABEL_COLUMN] = LABELS[
            int(marital_status == ' Married-civ-spouse' and
                values['education_num'] >= 10 or
                values['capital_gain'] >= 5000)]
        return ','.join(str(values[column]) if column == 'age'
                        else ' %s' % str(values[column]).lstrip()
                        for column in CSV_COLUMNS)

    paths = []
    for name, rows, seed in (('adult.data.csv', train_rows, 0),
                             ('adult.test.csv', eval_rows, 1)):
        rng = random.Random(seed)
        path = os.path.join(directory, name)
        with open(path, 'w') as f:
            for _ in range(rows):
                f.write(row(rng) + '\n')
        paths.append(path)
    return paths


if __name__ == '__main__':
    PARSER = argparse.ArgumentParser()
    # Input Arguments
    PARSER.add_argument(
        '--train-files',
        help='GCS file or local paths to training data',
        nargs='+',
        # Edit: was 'gs://cloud-samples-data/ml-engine/census/data/adult.data.csv'.
        default=None)
    PARSER.add_argument(
        '--eval-files',
        help='GCS file or local paths to evaluation data',
        nargs='+',
        # Edit: was 'gs://cloud-samples-data/ml-engine/census/data/adult.test.csv'.
        default=None)
    PARSER.add_argument(
        '--job-dir',
        help='GCS location to write checkpoints and export models',
        default='/tmp/census-estimator')
    PARSER.add_argument(
        '--num-parallel-calls',
        help='Number of threads used to read in parallel the training and '
             'evaluation',
        type=int)
    PARSER.add_argument(
        '--prefetch_buffer_size',
        help='Naximum number of input elements that will be buffered when '
             'prefetching',
        type=int)
    PARSER.add_argument(
        '--num-epochs',
        help="""\
      Maximum number of training data epochs on which to train.
      If both --max-steps and --num-epochs are specified,
      the training job will run for --max-steps or --num-epochs,
      whichever occurs first. If unspecified will run for --max-steps.\
      """,
        type=int)
    PARSER.add_argument(
        '--train-batch-size',
        help='Batch size for training steps',
        type=int,
        default=40)
    PARSER.add_argument(
        '--eval-batch-size',
        help='Batch size for evaluation steps',
        type=int,
        default=40)
    PARSER.add_argument(
        '--embedding-size',
        help='Number of embedding dimensions for categorical columns',
        default=8,
        type=int)
    PARSER.add_argument(
        '--first-layer-size',
        help='Number of nodes in the first layer of the DNN',
        default=100,
        type=int)
    PARSER.add_argument(
        '--num-layers',
        help='Number of layers in the DNN',
        default=4,
        type=int)
    PARSER.add_argument(
        '--scale-factor',
        help='How quickly should the size of the layers in the DNN decay',
        default=0.7,
        type=float)
    PARSER.add_argument(
        '--train-steps',
        help="""\
      Steps to run the training job for. If --num-epochs is not specified,
      this must be. Otherwise the training job will run indefinitely.""",
        # Edit: was 100; 1000 is what upstream's scripts/train-local.sh passes.
        default=1000,
        type=int)
    PARSER.add_argument(
        '--eval-steps',
        help='Number of steps to run evalution for at each checkpoint',
        default=100,
        type=int)
    PARSER.add_argument(
        '--export-format',
        help='The input format of the exported SavedModel binary',
        choices=['JSON', 'CSV', 'EXAMPLE'],
        default='JSON')
    PARSER.add_argument(
        '--verbosity',
        choices=['DEBUG', 'ERROR', 'FATAL', 'INFO', 'WARN'],
        default='INFO')

    ARGUMENTS, _ = PARSER.parse_known_args()

    # Edit: local data: synthetic census files for the ones not given, in a temporary
    # directory removed at exit.
    if ARGUMENTS.train_files is None or ARGUMENTS.eval_files is None:
        DATA_DIR = tempfile.mkdtemp(prefix='census-data-')
        atexit.register(shutil.rmtree, DATA_DIR, True)
        TRAIN_FILE, EVAL_FILE = write_synthetic_census(DATA_DIR)
        ARGUMENTS.train_files = ARGUMENTS.train_files or TRAIN_FILE
        ARGUMENTS.eval_files = ARGUMENTS.eval_files or EVAL_FILE

    # Set python level verbosity
    tf.logging.set_verbosity(ARGUMENTS.verbosity)
    # Suppress C++ level warnings.
    os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'

    # Run the training job
    train_and_evaluate(ARGUMENTS)
