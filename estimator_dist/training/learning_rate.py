"""The learning rate of the optimizer a model_fn builds, scaled where it is used.

Production model_fns often build their optimizer with a constant rate
(`AdamOptimizer(1e-3)`, `GradientDescentOptimizer(0.2)`) instead of reading it from
params, and canned Estimators build a legacy Keras optimizer from a name, a class, an
instance or a callable. While the decorator builds such a TRAIN graph it registers a
`Scaling` in the graph, and the rate is scaled (with warmup) where the optimizer turns
it into a tensor:
- a tf.compat.v1.train optimizer in `_prepare()`, once per `apply_gradients`: its rate
  attribute is replaced for that moment only, so an object used again is not scaled
  twice (each concrete class is wrapped once);
- a legacy Keras optimizer (tf.keras.optimizers.legacy, as canned Estimators use) in
  `_decayed_lr()`, which every one of them calls for its rate.
A graph without a `Scaling` is left alone. It is a graph setting, not a thread's:
MirroredStrategy builds its replicas in threads, which share one `Scaling`, and a v1
optimizer prepares its rate once for all of them.
"""

import dataclasses
import threading
import weakref

import tensorflow as tf
from absl import logging

from estimator_dist import command_line
from estimator_dist.strategies import base

_SCALINGS = weakref.WeakKeyDictionary()  # tf.Graph -> its Scaling.
_RATE_ATTRIBUTES = ("_learning_rate", "_lr")  # Every v1 optimizer keeps its rate in one.
_WRAPPED = "_estimator_dist_scales_rate"
_SCALING_NOW = "_estimator_dist_scaling_rate"
_lock = threading.Lock()
_LEFT_ALONE = set()  # The optimizer classes whose program's own rate was said to stay.


@dataclasses.dataclass
class Scaling:
  """How to scale a rate: `rate_at(step, base, scaled, where=...)` gives the rate in use."""
  factor: float
  rate_at: object
  found: list = dataclasses.field(default_factory=list)  # The classes of the optimizers.

  def left_alone(self, optimizer):
    """Notes once that `optimizer`'s rate, which its program scaled, is not scaled again."""
    self.found.append(type(optimizer).__name__)
    with _lock:
      if type(optimizer) in _LEFT_ALONE:
        return
      _LEFT_ALONE.add(type(optimizer))
    logging.info(command_line.line(
        "learning rate of the %s in the model_fn's own Horovod DistributedOptimizer left as "
        "it is, not scaled again: a program that wraps its optimizer itself scales its rate "
        "itself (Horovod's examples multiply it by hvd.size())"), type(optimizer).__name__)

  def scaled(self, rate, optimizer, shown=None):
    """`rate` of `optimizer` scaled; `shown` is the number the user set, for the log."""
    self.found.append(type(optimizer).__name__)
    base = rate() if callable(rate) else rate
    step = tf.compat.v1.train.get_or_create_global_step()
    return self.rate_at(step, base, base * self.factor, shown=shown,
                        where=f"the {type(optimizer).__name__} built in the model_fn")


def register(scaling):
  """Makes the optimizers of the default graph scale their rates with `scaling`; returns
  the graph's Scaling (the first one registered: replicas share it)."""
  _wrap_optimizer_classes()
  with _lock:
    return _SCALINGS.setdefault(tf.compat.v1.get_default_graph(), scaling)


def _current():
  return _SCALINGS.get(tf.compat.v1.get_default_graph())


def _wrap_optimizer_classes():
  """Wraps `_prepare` of every v1 optimizer class defined so far and the legacy Keras
  optimizers' `_decayed_lr`, once each."""
  with _lock:
    keras = tf.keras.optimizers.legacy.Optimizer
    if not getattr(keras._decayed_lr, _WRAPPED, False):  # pylint: disable=protected-access
      keras._decayed_lr = _scaling_decayed_lr(keras._decayed_lr)  # pylint: disable=protected-access
    todo = [tf.compat.v1.train.Optimizer]
    while todo:
      cls = todo.pop()
      todo.extend(cls.__subclasses__())
      prepare = cls.__dict__.get("_prepare")  # The base class's ignores the rate.
      if (prepare is not None and cls is not tf.compat.v1.train.Optimizer and
          not getattr(prepare, _WRAPPED, False)):
        setattr(cls, "_prepare", _scaling_prepare(prepare))


def _scaling_prepare(prepare):
  def scaling_prepare(optimizer):
    scaling = _current()
    attribute = next((a for a in _RATE_ATTRIBUTES if a in optimizer.__dict__), None)
    # A subclass's _prepare that calls its parent's is scaled once, in the outer call.
    if scaling is None or attribute is None or optimizer.__dict__.get(_SCALING_NOW):
      return prepare(optimizer)
    if optimizer.__dict__.get(base.RATE_SCALED_BY_PROGRAM):
      scaling.left_alone(optimizer)
      return prepare(optimizer)
    rate = optimizer.__dict__[attribute]
    optimizer.__dict__.update({attribute: scaling.scaled(rate, optimizer), _SCALING_NOW: True})
    try:
      return prepare(optimizer)
    finally:
      optimizer.__dict__.update({attribute: rate, _SCALING_NOW: False})
  setattr(scaling_prepare, _WRAPPED, True)
  return scaling_prepare


def _scaling_decayed_lr(decayed_lr):
  def scaling_decayed_lr(optimizer, var_dtype):
    rate = decayed_lr(optimizer, var_dtype)
    scaling = _current()
    if scaling is None:
      return rate
    configured = optimizer._hyper.get("learning_rate")  # pylint: disable=protected-access
    if isinstance(configured, tf.Variable):  # Made from the number the user gave.
      configured = tf.get_static_value(configured.initial_value)
    shown = float(configured) if configured is not None and not callable(configured) else None
    return tf.cast(scaling.scaled(tf.cast(rate, tf.float32), optimizer, shown=shown),
                   var_dtype)
  setattr(scaling_decayed_lr, _WRAPPED, True)
  return scaling_decayed_lr
