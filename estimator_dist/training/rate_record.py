"""The learning rate a training used, as a record in its model_dir.

The decorator logs the rate it scales ("estimator-dist: learning rate 0.01 (from
params['learning_rate']) x 2 (linear scaling, 2 replicas) = 0.02"). The chief also writes
the first rate it scales in a training to `<model_dir>/estimator_dist/learning_rate.json`,
so a program (`estimator-dist verify`) reads the facts instead of parsing the log. A
model whose rate is its own (a canned or Keras Estimator's optimizer, unscaled) has none.
"""

import dataclasses
import json
import os
from typing import Optional

import tensorflow as tf

from estimator_dist.contract import checkpoint_names

PATH = os.path.join(checkpoint_names.TOOLKIT_DIR, "learning_rate.json")  # In the model_dir.


@dataclasses.dataclass(frozen=True, kw_only=True)
class RateRecord:
  """One learning rate as the decorator scaled it.

  base: the rate the model set (None: a tensor, such as an optimizer's own schedule).
  factor: what `scaling` multiplied the rate by for `replicas` synchronous replicas.
  scaled: base x factor, the rate after warmup (None when base is None).
  source: where the rate was found: params['learning_rate'], or the optimizer built in the
    model_fn.
  warmup_steps: steps over which the rate rises linearly from base to scaled.
  """
  base: Optional[float]
  factor: float
  scaling: str
  replicas: int
  scaled: Optional[float]
  source: str
  warmup_steps: int = 0


def write(model_dir, record):
  """Writes `record` as the learning rate of the training in `model_dir`."""
  path = os.path.join(model_dir, PATH)
  tf.io.gfile.makedirs(os.path.dirname(path))
  with tf.io.gfile.GFile(path, "w") as f:
    f.write(json.dumps(dataclasses.asdict(record), indent=1) + "\n")


def read(model_dir) -> Optional[RateRecord]:
  """The record of the latest training in `model_dir`; None where it wrote none."""
  path = os.path.join(model_dir, PATH)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return RateRecord(**json.load(f))
