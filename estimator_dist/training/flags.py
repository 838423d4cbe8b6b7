"""absl flags for programs: `define_flags()` and `options_from_flags()`.

Library code takes keyword arguments; only programs define flags, through these. The
backend flags are made from the options dataclasses' field metadata (`option_flags.option`), so
an option, its flag, its help and the check that it suits --strategy are declared once.
"""

import dataclasses
from typing import Tuple

from absl import flags

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.strategies import base
from estimator_dist.strategies import factory
from estimator_dist.strategies import traits
from estimator_dist.training import decorator
from estimator_dist.task import best_checkpoints
from estimator_dist.task import early_stopping
from estimator_dist.task import evaluation
from estimator_dist.training import options as options_lib

DEFINED = "estimator_dist_training_flags"  # A flag that marks define_flags' flags.


@dataclasses.dataclass(frozen=True, kw_only=True)
class BackendFlag:
  """A flag that sets an option of the strategies' options dataclasses.

  option: the field it sets; strategies: the strategies that have that option, () for
  the options every strategy has (base.Options).
  """
  holder: flags.FlagHolder
  option: str
  strategies: Tuple[str, ...]


def backend_options():
  """(OptionFlag, flag name, default, option, strategies) of every option that has a flag: the
  options of every strategy first, then each strategy's own in the order of the table."""
  common = {f.name for f in dataclasses.fields(base.Options)}
  found = {}  # flag name -> [field, strategies]
  for field in option_flags.flag_fields(base.Options):
    found[option_flags.flag_name(field)] = [field, ()]
  for name in traits.STRATEGIES:
    for field in option_flags.flag_fields(factory.adapter_class(name).Options):
      if field.name not in common:
        entry = found.setdefault(option_flags.flag_name(field), [field, ()])
        if entry[0].name != field.name:  # One flag sets one option, whatever the strategy.
          raise TypeError(f"flag --{option_flags.flag_name(field)} sets {entry[0].name} "
                          f"and {field.name}; give the options flags of their own.")
        entry[1] += (name,)
  return [(option_flags.flag_of(f), option_flags.flag_name(f), option_flags.flag_default(f),
           f.name, owners)
          for f, owners in found.values()]


def _define_backend_flag(spec, *, name, default, strategies, flag_values):
  return option_flags.define_flag(
      spec, name=name, default=default, flag_values=flag_values,
      help_prefix=f"{', '.join(strategies)}: " if strategies else "")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainingFlags:
  """The flags `define_flags` defines, as FlagHolders; `options()` reads them."""
  strategy: flags.FlagHolder
  model_dir: flags.FlagHolder
  train_steps: flags.FlagHolder
  eval_steps: flags.FlagHolder
  batch_size: flags.FlagHolder
  learning_rate: flags.FlagHolder
  lr_scaling: flags.FlagHolder
  warmup_steps: flags.FlagHolder
  save_checkpoints_steps: flags.FlagHolder
  keep_checkpoint_max: flags.FlagHolder
  keep_checkpoint_every_n_hours: flags.FlagHolder
  keep_best_checkpoints: flags.FlagHolder
  best_metric: flags.FlagHolder
  best_direction: flags.FlagHolder
  eval_throttle_secs: flags.FlagHolder
  eval_timeout_secs: flags.FlagHolder
  random_seed: flags.FlagHolder
  exporters: flags.FlagHolder
  exports_to_keep: flags.FlagHolder
  early_stopping_patience_steps: flags.FlagHolder
  early_stopping_metric: flags.FlagHolder
  early_stopping_mode: flags.FlagHolder
  profile_steps: flags.FlagHolder
  profile_tasks: flags.FlagHolder
  backend: Tuple[BackendFlag, ...]

  @classmethod
  def of(cls, flag_values) -> "TrainingFlags":
    """The holders of the flags that `define_flags` defined on `flag_values`: for
    `options_from_flags(flag_values)`, whose callers have no holders."""
    if DEFINED not in flag_values:
      raise errors.ConfigError("the training flags are not defined: call "
                               "estimator_dist.define_flags() before the flags are parsed.")
    holder = lambda name: flags.FlagHolder(flag_values, flag_values[name])  # noqa: E731
    backend = tuple(BackendFlag(holder=holder(name), option=option, strategies=strategies)
                    for _, name, _, option, strategies in backend_options())
    return cls(**{f.name: holder(f.name) for f in dataclasses.fields(cls)
                  if f.name != "backend"}, backend=backend)

  def strategy_and_options(self):
    """(strategy name, its keyword options) from the flags."""
    strategy = traits.of(self.strategy.value).name
    strategy_options = {}
    for flag in self.backend:
      if not flag.strategies or (strategy in flag.strategies and flag.holder.value is not None):
        strategy_options[flag.option] = flag.holder.value
    if "global_batch_size" in strategy_options:
      strategy_options["batch_size"] = self.batch_size.value  # The micro-batch.
    return strategy, strategy_options

  def options(self) -> options_lib.TrainOptions:
    """The TrainOptions that the flags set."""
    if not self.model_dir.value:
      raise errors.ConfigError("--model_dir is required: a directory every task can reach.")
    strategy, strategy_options = self.strategy_and_options()
    stopping = None
    if self.early_stopping_patience_steps.value:
      stopping = early_stopping.EarlyStopping(
          metric=self.early_stopping_metric.value, mode=self.early_stopping_mode.value,
          patience_steps=self.early_stopping_patience_steps.value)
    best = None
    if not self.keep_best_checkpoints.value and (self.best_metric.present or
                                                 self.best_direction.present):
      raise errors.ConfigError("--best_metric and --best_direction rank the checkpoints that "
                               "--keep_best_checkpoints=N keeps; give it too.")
    if self.keep_best_checkpoints.value:
      best = best_checkpoints.BestCheckpoints(
          keep=self.keep_best_checkpoints.value, metric=self.best_metric.value,
          direction=self.best_direction.value)
    return options_lib.TrainOptions(
        strategy=strategy, strategy_options=strategy_options, model_dir=self.model_dir.value,
        train_steps=self.train_steps.value, eval_steps=self.eval_steps.value,
        batch_size=self.batch_size.value, learning_rate=self.learning_rate.value,
        lr_scaling=self.lr_scaling.value, warmup_steps=self.warmup_steps.value,
        save_checkpoints_steps=self.save_checkpoints_steps.value,
        keep_checkpoint_max=self.keep_checkpoint_max.value,
        keep_checkpoint_every_n_hours=self.keep_checkpoint_every_n_hours.value,
        best_checkpoints=best, eval_throttle_secs=self.eval_throttle_secs.value,
        eval_timeout_secs=self.eval_timeout_secs.value, random_seed=self.random_seed.value,
        exporters=self.exporters.value, exports_to_keep=self.exports_to_keep.value,
        early_stopping=stopping, profile_steps=self.profile_steps.value,
        profile_tasks=self.profile_tasks.value)


def define_flags(flag_values=flags.FLAGS, *, strategy="local", batch_size=32,
                 learning_rate=1e-3, train_steps=1000) -> TrainingFlags:
  """Defines the training flags on `flag_values`, with the program's defaults."""
  f = flag_values
  flags.DEFINE_bool(DEFINED, True, "Internal: the training flags are defined.",
                    flag_values=f)
  defined = TrainingFlags(  # Keywords are evaluated in order: the flags' order.
      strategy=flags.DEFINE_enum("strategy", strategy, traits.NAMES,
                                 "Distribution strategy.", flag_values=f),
      model_dir=flags.DEFINE_string("model_dir", None,
                                    "Checkpoint directory shared by all tasks.", flag_values=f),
      train_steps=flags.DEFINE_integer("train_steps", train_steps, "Global step to train to.",
                                       lower_bound=1, flag_values=f),
      eval_steps=flags.DEFINE_integer("eval_steps", None,
                                      "Eval batches; default the whole eval set.",
                                      lower_bound=1, flag_values=f),
      batch_size=flags.DEFINE_integer("batch_size", batch_size,
                                      "Batch size per worker (per replica).", lower_bound=1,
                                      flag_values=f),
      learning_rate=flags.DEFINE_float("learning_rate", learning_rate,
                                       "Single-worker learning rate.", lower_bound=0.0,
                                       flag_values=f),
      lr_scaling=flags.DEFINE_enum(
          "lr_scaling", None, decorator.LR_SCALINGS, "Learning-rate scaling with replicas "
          "(default: linear if synchronous, none for parameter_server).", flag_values=f),
      warmup_steps=flags.DEFINE_integer("warmup_steps", None,
                                        "Steps of linear warmup to the scaled rate.",
                                        lower_bound=0, flag_values=f),
      save_checkpoints_steps=flags.DEFINE_integer("save_checkpoints_steps", None,
                                                  "Checkpoint interval in steps.",
                                                  lower_bound=1, flag_values=f),
      keep_checkpoint_max=flags.DEFINE_integer("keep_checkpoint_max", 5, "Newest checkpoints "
                                               "kept; 0 keeps all.", lower_bound=0,
                                               flag_values=f),
      keep_checkpoint_every_n_hours=flags.DEFINE_float(
          "keep_checkpoint_every_n_hours", None, "Also keep one checkpoint of every this many "
          "hours.", flag_values=f),
      keep_best_checkpoints=flags.DEFINE_integer(
          "keep_best_checkpoints", 0, "Keep the best this many checkpoints by --best_metric "
          "in model_dir/best, which keep_checkpoint_max never deletes; 0: none.",
          lower_bound=0, flag_values=f),
      best_metric=flags.DEFINE_string("best_metric", "loss", "The eval metric that ranks the "
                                      "checkpoints --keep_best_checkpoints keeps.",
                                      flag_values=f),
      best_direction=flags.DEFINE_enum(
          "best_direction", None, best_checkpoints.DIRECTIONS, "Whether a higher "
          "--best_metric is better (maximize) or a lower (minimize; the default for loss "
          "only).", flag_values=f),
      eval_throttle_secs=flags.DEFINE_integer("eval_throttle_secs", 60,
                                              "Least seconds between evaluations.",
                                              lower_bound=0, flag_values=f),
      eval_timeout_secs=flags.DEFINE_float(
          "eval_timeout_secs", None, f"Stop an evaluation (and fail) after this many seconds "
          f"(0: never); default {evaluation.TIMEOUT_MULTIPLE}x the longest so far, at least "
          f"{evaluation.TIMEOUT_FLOOR_SECS} s.", lower_bound=0.0, flag_values=f),
      random_seed=flags.DEFINE_integer("random_seed", 0, "Graph seed shared by all tasks.",
                                       flag_values=f),
      exporters=flags.DEFINE_list(
          "exporters", [], f"Serving exports after evaluations, of "
          f"{', '.join(evaluation.EXPORTER_KINDS)} (the program passes "
          f"serving_input_receiver_fn).", flag_values=f),
      exports_to_keep=flags.DEFINE_integer("exports_to_keep", 5, "Newest exports the latest "
                                           "and best exporters keep.", lower_bound=1,
                                           flag_values=f),
      early_stopping_patience_steps=flags.DEFINE_integer(
          "early_stopping_patience_steps", None, "Stop every task when the eval metric has "
          "not improved for this many steps.", lower_bound=1, flag_values=f),
      early_stopping_metric=flags.DEFINE_string(
          "early_stopping_metric", "loss", "Eval metric early stopping watches.",
          flag_values=f),
      early_stopping_mode=flags.DEFINE_enum(
          "early_stopping_mode", "min", early_stopping.MODES,
          "min: the metric should decrease; max: increase.", flag_values=f),
      profile_steps=flags.DEFINE_string(
          "profile_steps", None, "FIRST:LAST: record TensorFlow's profiler from global step "
          "FIRST to LAST on every training task, into model_dir/plugins/profile for "
          "TensorBoard's Profile tab.", flag_values=f),
      profile_tasks=flags.DEFINE_list(
          "profile_tasks", [], "With --profile_steps: only these tasks (chief:0,worker:1); "
          "default every training task.", flag_values=f),
      backend=tuple(
          BackendFlag(holder=_define_backend_flag(spec, name=name, default=default,
                                                  strategies=strategies, flag_values=f),
                      option=option, strategies=strategies)
          for spec, name, default, option, strategies in backend_options()))
  flags.register_validator("exporters", lambda v: set(v) <= set(evaluation.EXPORTER_KINDS),
                           f"--exporters takes {', '.join(evaluation.EXPORTER_KINDS)}.",
                           flag_values=f)

  def _warmup_within_training(v):
    return v["warmup_steps"] is None or v["warmup_steps"] < v["train_steps"]
  flags.register_multi_flags_validator(
      ["warmup_steps", "train_steps"], _warmup_within_training,
      "--warmup_steps must be smaller than --train_steps.", flag_values=f)

  for flag in (b for b in defined.backend if b.strategies):
    name, default, owners = flag.holder.name, flag.holder.default, flag.strategies

    def _only_for(v, name=name, owners=owners, default=default):
      return v[name] == default or traits.of(v["strategy"]).name in owners
    flags.register_multi_flags_validator(
        [name, "strategy"], _only_for,
        f"--{name} applies only to {' or '.join(f'--strategy={o}' for o in owners)}; drop "
        f"it or change --strategy.", flag_values=f)

  def _predivide_needs_average(v):
    return v["gradient_predivide_factor"] == 1.0 or v["hvd_reduction"] == "average"
  flags.register_multi_flags_validator(
      ["gradient_predivide_factor", "hvd_reduction"], _predivide_needs_average,
      "--gradient_predivide_factor needs --hvd_reduction=average.", flag_values=f)
  return defined


def options_from_flags(flag_values=flags.FLAGS) -> options_lib.TrainOptions:
  """The TrainOptions that the flags (defined by `define_flags`) set."""
  return TrainingFlags.of(flag_values).options()
