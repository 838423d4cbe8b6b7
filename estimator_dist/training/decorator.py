"""The `distributed` decorator: a single-machine model_fn, made right for any backend.

This module is the one place that decorates. The decorated model_fn body stays as a
single-machine user wrote it. At each call the decorator asks the active strategy
adapter (`strategies.context`) how many synchronous replicas make one update, scales
`params[lr_param]` (or, when the model_fn does not read it, the rate of the optimizer it
builds: `learning_rate`) by the chosen rule with linear warmup from the base rate (Goyal
et al., 2017), lets the adapter all-reduce gradients while the TRAIN graph is built, and
adds the adapter's training hooks. Outside an adapter it is one local process. The rate it
scales is logged, and the chief records it in the model_dir (`rate_record`).
"""

import collections.abc
import contextlib
import dataclasses
import functools
import math
import threading

import tensorflow as tf
from absl import logging

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.strategies import context
from estimator_dist.training import hooks as hooks_lib
from estimator_dist.training import learning_rate
from estimator_dist.training import rate_options
from estimator_dist.training import rate_record

_MODEL_FN_ARGS = ("features", "labels", "mode", "params", "config")
_DECORATION_ATTR = "_estimator_dist_decoration"
_logged = set()
_recorded = set()  # (adapter, model_dir): the first rate of a training is its record.
_lock = threading.Lock()


class _LocalProcess:
  """What the decorator sees outside any adapter: one process, nothing to distribute."""
  name, num_replicas, default_lr_scaling = "local", 1, "linear"
  gradient_context = staticmethod(contextlib.nullcontext)

  def check_train_spec(self, spec):
    del spec

  def training_hooks(self):
    return []


_LOCAL_PROCESS = _LocalProcess()


def scale_factor(scaling: str, replicas: int) -> float:
  """How much the learning rate grows with `replicas` synchronous replicas."""
  if scaling == "linear":
    return float(replicas)
  if scaling == "sqrt":
    return math.sqrt(replicas)
  errors.check_choice("lr_scaling", scaling, rate_options.LR_SCALINGS)
  return 1.0


def learning_rate_at(step, base_rate, scaled_rate, warmup_steps):
  """The rate at `step`: linear from `base_rate` at 0 to `scaled_rate` at `warmup_steps`.

  Works on Python numbers and on tensors.
  """
  if warmup_steps <= 0:
    return scaled_rate
  if isinstance(step, (int, float)):
    progress = min(float(step), warmup_steps) / warmup_steps
  else:
    progress = tf.minimum(tf.cast(step, tf.float32), float(warmup_steps)) / warmup_steps
  return base_rate + (scaled_rate - base_rate) * progress


def decorated(model_fn, *, lr_scaling=None, warmup_steps=None):
  """`model_fn` decorated once, the given options over those it was decorated with.

  Returns (decorated model_fn, its RateOptions). Training and evaluation call this; an
  undecorated model_fn gets the default options.
  """
  original, options = getattr(model_fn, _DECORATION_ATTR,
                              (model_fn, rate_options.RateOptions()))
  changes = {k: v for k, v in (("lr_scaling", lr_scaling), ("warmup_steps", warmup_steps))
             if v is not None}
  options = dataclasses.replace(options, **changes)
  return _decorate(original, options), options


def check_model_fn(model_fn):
  """Raises at once for a model_fn that Estimator would reject."""
  args = errors.check_args(model_fn, "model_fn", _MODEL_FN_ARGS,
                           "Pass other values through params or functools.partial.")
  if "features" not in args:
    raise errors.ConfigError(
        f"model_fn {model_fn.__name__} takes {args} but no `features`; Estimator requires "
        f"it. Rename the first argument to `features`.")
  return args


def distributed(model_fn=None, *, lr_scaling=None, warmup_steps=0, lr_param="learning_rate"):
  """Makes a single-machine `model_fn` train correctly under every strategy.

  Args:
    model_fn: the Estimator model_fn; use bare (`@distributed`) or with options.
    lr_scaling: "linear", "sqrt" or "none"; by default linear for synchronous
      strategies and none for asynchronous parameter servers.
    warmup_steps: steps over which the rate rises linearly from the base rate to
      the scaled rate.
    lr_param: the key of `params` that holds the base learning rate.
  """
  options = rate_options.RateOptions(lr_scaling=lr_scaling, warmup_steps=warmup_steps,
                                     lr_param=lr_param)
  if model_fn is None:
    return functools.partial(_decorate, options=options)
  return _decorate(model_fn, options)


def copied_params(params):
  """A copy of a dict of params (the rate is scaled in the copy); params of any other type
  TensorFlow accepts (an HParams, an argparse.Namespace) as the program gave them."""
  if params is None:
    return {}
  return dict(params) if isinstance(params, collections.abc.Mapping) else params


def _decorate(model_fn, options):
  args = set(check_model_fn(model_fn))
  name = getattr(model_fn, "__name__", "model_fn")
  lr_param, warmup_steps = options.lr_param, options.warmup_steps

  def distributed_model_fn(features, labels, mode, params, config):
    adapter = context.current_adapter() or _LOCAL_PROCESS
    params, in_optimizer = _scaled_params(copied_params(params), adapter, mode, config)
    values = {"features": features, "labels": labels, "mode": mode, "params": params,
              "config": config}
    call = functools.partial(model_fn, **{k: v for k, v in values.items() if k in args})
    if mode != tf.estimator.ModeKeys.TRAIN:
      return call()
    if in_optimizer:
      in_optimizer = learning_rate.register(in_optimizer)
    with adapter.gradient_context():
      spec = call()
    if in_optimizer:
      _check_found(in_optimizer, adapter, params)
    adapter.check_train_spec(spec)
    hooks_lib.record_loss(spec.loss)
    hooks = adapter.training_hooks()
    if hooks:
      spec = spec._replace(training_hooks=tuple(spec.training_hooks) + tuple(hooks))
    return spec

  def _scaled_params(params, adapter, mode, config):
    """(params with the rate scaled, or a Scaling for the rate of the model_fn's optimizer)."""
    scaling = options.lr_scaling or adapter.default_lr_scaling
    factor = scale_factor(scaling, adapter.num_replicas)
    record_dir = getattr(config, "model_dir", None) if _is_chief(adapter) else None
    rate_at = functools.partial(_rate_at, warmup_steps=warmup_steps if factor != 1.0 else 0,
                                log=functools.partial(_log_once, adapter, factor, scaling,
                                                      warmup_steps, record_dir))
    if ("params" not in args or not isinstance(params, collections.abc.Mapping) or
        lr_param not in params):
      in_optimizer = factor != 1.0 and mode == tf.estimator.ModeKeys.TRAIN
      return params, learning_rate.Scaling(factor, rate_at) if in_optimizer else None
    base_rate = float(params[lr_param])
    if mode != tf.estimator.ModeKeys.TRAIN:
      params[lr_param] = base_rate * factor
      return params, None
    step = tf.compat.v1.train.get_or_create_global_step()
    params[lr_param] = rate_at(step, base_rate, base_rate * factor,
                               where=f"params['{lr_param}']")
    return params, None

  def _check_found(in_optimizer, adapter, params):
    if in_optimizer.found:
      return
    scaling = options.lr_scaling or adapter.default_lr_scaling
    why = ("the model_fn takes no params argument" if "params" not in args else
           f"params is a {type(params).__name__}, not a dict"
           if not isinstance(params, collections.abc.Mapping) else
           f"params has no '{lr_param}' (its keys: {sorted(params) or 'none'})")
    raise errors.ConfigError(
        f"model_fn {name} trains on {adapter.num_replicas} replicas with {scaling} "
        f"learning-rate scaling, but no learning rate was found to scale. Looked in "
        f"params['{lr_param}'] ({why}) and in the learning rate of a tf.compat.v1.train "
        f"or tf.keras.optimizers.legacy optimizer applied in the model_fn (none was). Read "
        f"the rate from params['{lr_param}'] (or name its key with lr_param=...), build "
        f"the train_op with one of those optimizers, or pass lr_scaling='none' to keep "
        f"the rate unscaled on purpose.")

  distributed_model_fn.__name__ = name
  distributed_model_fn.__doc__ = model_fn.__doc__
  setattr(distributed_model_fn, _DECORATION_ATTR, (model_fn, options))
  return distributed_model_fn


def _rate_at(step, base_rate, scaled_rate, *, warmup_steps, log, where, shown=None):
  """The rate in use at `step` (see learning_rate_at), logged once with where it was found
  (as `shown`, the rate the user set, when the base rate is a tensor made from it)."""
  log(base_rate if shown is None else shown, where)
  return learning_rate_at(step, base_rate, scaled_rate, warmup_steps)


def _is_chief(adapter):
  """Whether this process writes the job's records (one local process does)."""
  task = getattr(adapter, "task", None)
  return task is None or task.is_chief


def _log_once(adapter, factor, scaling, warmup_steps, record_dir, base_rate, where):
  """Logs the rate once per place it was found; `record_dir` (the chief's model_dir, else
  None) gets the first one of each training as its record. Mirrored's replica threads
  call it at once."""
  number = isinstance(base_rate, (int, float))
  warmup_steps = warmup_steps if factor != 1.0 else 0  # Nothing to warm up to.
  with _lock:
    if record_dir and (id(adapter), record_dir) not in _recorded:
      _recorded.add((id(adapter), record_dir))
      rate_record.write(record_dir, rate_record.RateRecord(
          base=float(base_rate) if number else None, factor=factor, scaling=scaling,
          replicas=adapter.num_replicas, scaled=float(base_rate) * factor if number else None,
          source=where, warmup_steps=warmup_steps))
    key = (id(adapter), where, factor)
    if key in _logged:
      return
    _logged.add(key)
  base = f"{base_rate:g}" if number else f"in {getattr(base_rate, 'name', base_rate)}"
  scaled = f" = {base_rate * factor:g}" if number else ""
  warmup = (f", warming up linearly from the base rate over {warmup_steps} steps"
            if warmup_steps else "")
  logging.info(command_line.line("learning rate %s (from %s) x %g (%s scaling, %d replicas)%s%s"),
               base, where, factor, scaling, adapter.num_replicas, scaled, warmup)
