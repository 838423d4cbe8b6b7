"""TensorFlow's form of `train_and_evaluate`, (estimator, TrainSpec, EvalSpec): the
arguments of a `TrainingRun` that mean what TensorFlow means by the specs.

The options start from `options=`, else from the training flags when the program defined
and parsed them (`define_flags`), else from TrainOptions' defaults; keywords go over them.
The specs give train_steps (max_steps; without it, one pass over the input: `one_pass`),
eval_steps, eval_throttle_secs, exporters and hooks; the Estimator's RunConfig gives the
model_dir (see `run_config_merge` for the rest).
"""

import os

import tensorflow as tf
from absl import flags
from absl import logging

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.training import flags as flags_lib
from estimator_dist.training import one_pass
from estimator_dist.training import options as options_lib
from estimator_dist.training import run_config_merge

# TrainOptions fields that the specs set in this form: (field, spec and its field).
_FROM_SPECS = {"train_steps": "TrainSpec.max_steps", "eval_steps": "EvalSpec.steps",
               "eval_throttle_secs": "EvalSpec.throttle_secs"}


def is_spec_form(train, evaluation):
  """Whether train_and_evaluate's 2nd and 3rd arguments are TensorFlow's specs."""
  return (isinstance(train, tf.estimator.TrainSpec) or
          isinstance(evaluation, tf.estimator.EvalSpec))


def run_arguments(model, train_spec, eval_spec, *, options=None, fields=None, hooks=(),
                  params=None, serving_input_receiver_fn=None):
  """The keywords of the `TrainingRun` of train_and_evaluate(model, train_spec, eval_spec,
  ...), checked; builds nothing else."""
  fields = dict(fields or {})
  if not (isinstance(train_spec, tf.estimator.TrainSpec) and
          isinstance(eval_spec, tf.estimator.EvalSpec)):
    raise errors.ConfigError(
        f"train_and_evaluate(estimator, train_spec, eval_spec) takes a tf.estimator.TrainSpec "
        f"and a tf.estimator.EvalSpec, got {type(train_spec).__name__} and "
        f"{type(eval_spec).__name__}.")
  if hooks:
    raise errors.ConfigError("with a TrainSpec, give the training hooks as "
                             "TrainSpec(hooks=...), not as hooks=.")
  given = [f"{name} (the {spec})" for name, spec in _FROM_SPECS.items() if name in fields]
  if given:
    raise errors.ConfigError(f"{', '.join(given)} is the spec's to set here: set it there, "
                             f"not as a keyword.")
  if eval_spec.name is not None:
    logging.info(command_line.line("EvalSpec name %r is not used: evaluations go to "
                                   "model_dir/eval, which the launcher, early stopping and "
                                   "sweeps read"), eval_spec.name)
  if eval_spec.start_delay_secs:
    logging.info(command_line.line("EvalSpec start_delay_secs (%s) is not used: evaluation "
                                   "follows the checkpoints training writes"),
                 eval_spec.start_delay_secs)
  fields.update(train_steps=train_spec.max_steps or one_pass.UNTIL_THE_INPUT_ENDS,
                eval_steps=eval_spec.steps,
                eval_throttle_secs=eval_spec.throttle_secs,
                model_dir=_model_dir(model, options, fields))
  options = _options(options, fields)
  if eval_spec.exporters:  # Besides those the options name (--exporters).
    options = options.replace(exporters=(*options.exporters, *eval_spec.exporters))
  return dict(model=model, train_input_fn=train_spec.input_fn,
              eval_input_fn=eval_spec.input_fn, params=params, hooks=train_spec.hooks,
              saving_listeners=train_spec.saving_listeners, eval_hooks=eval_spec.hooks,
              serving_input_receiver_fn=serving_input_receiver_fn, options=options)


def _options(options, fields):
  if options is not None:
    return options.replace(**fields)
  if flags_lib.parsed():
    return flags_lib.TrainingFlags.of(flags.FLAGS).options(**fields)
  return options_lib.TrainOptions(**fields)


def _model_dir(model, options, fields):
  """The Estimator's model_dir, else the job's (model_dir=, options, --model_dir)."""
  own = None
  if isinstance(model, tf.compat.v1.estimator.Estimator):
    own = run_config_merge.own_model_dir(model._config)  # pylint: disable=protected-access
  given = fields.get("model_dir") or (options.model_dir if options is not None else None)
  if not given and flags_lib.parsed() and flags.FLAGS["model_dir"].present:
    given = flags.FLAGS["model_dir"].value
  if not (own or given):  # The flag's default: the job's, where an engine gave one.
    given = flags.FLAGS["model_dir"].value if flags_lib.parsed() else None
  if own and given and os.path.normpath(own) != os.path.normpath(given):
    raise errors.ConfigError(
        f"the Estimator's model_dir is {own} but the job's is {given}: give the job one "
        f"(--model_dir={own}, or the same in the RunConfig).")
  if not (own or given):
    raise errors.ConfigError(
        "the Estimator has no model_dir (RunConfig(model_dir=...)) and none was given "
        "(--model_dir or model_dir=): a job needs one directory that every task reaches.")
  return own or given
