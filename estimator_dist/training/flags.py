"""absl flags for programs: `define_flags()` and `options_from_flags()`.

Library code takes keyword arguments; only programs define flags, through these. The
flags are made from the options dataclasses' field metadata (`option_flags.option`):
TrainOptions', BestCheckpoints', EarlyStopping's and the backends'; so an option, its flag
and its help are declared once, and the options' `__post_init__` checks the values, naming
the flag. --strategy, which picks the backend, is the programs' own flag, and a backend's
flag is refused with another strategy. No TensorFlow here, nor in those dataclasses'
modules: a command's --help lists the flags where TensorFlow is not installed.
"""

import dataclasses
import os
from typing import Dict, Tuple

from absl import flags

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.contract import env_vars
from estimator_dist.outputs import best_checkpoints
from estimator_dist.strategies import factory
from estimator_dist.strategies import options as adapter_options
from estimator_dist.strategies import traits
from estimator_dist.task import early_stopping_options
from estimator_dist.training import options as options_lib

DEFINED = "estimator_dist_training_flags"  # A flag that marks define_flags' flags.
_DEFINED_FLAG = option_flags.OptionFlag(kind="bool", help="Internal: the training flags are "
                                        "defined.")
_STRATEGY_FLAG = option_flags.OptionFlag(kind="enum", values=traits.NAMES,
                                         help="Distribution strategy.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class BackendFlag:
  """A flag that sets an option of the strategies' options dataclasses.

  option: the field it sets; strategies: the strategies that have that option, () for
  the options every strategy has (strategies.options.Options).
  """
  holder: flags.FlagHolder
  option: str
  strategies: Tuple[str, ...]


def backend_options():
  """(OptionFlag, flag name, default, option, strategies) of every option that has a flag: the
  options of every strategy first, then each strategy's own in the order of the table."""
  common = {f.name for f in dataclasses.fields(adapter_options.Options)}
  found = {}  # flag name -> [field, strategies]
  for field in option_flags.flag_fields(adapter_options.Options):
    found[option_flags.flag_name(field)] = [field, ()]
  for name in traits.STRATEGIES:
    for field in option_flags.flag_fields(factory.options_class(name)):
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
      help_prefix=f"{', '.join(strategies)}: " if strategies else "", reuse=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainingFlags:
  """The flags `define_flags` defines, as FlagHolders: --strategy, {field: holder} of the
  options they set (TrainOptions', BestCheckpoints', EarlyStopping's) and the backends';
  `options()` reads them."""
  strategy: flags.FlagHolder
  settings: Dict[str, flags.FlagHolder]
  best: Dict[str, flags.FlagHolder]
  stopping: Dict[str, flags.FlagHolder]
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
    return cls(strategy=holder("strategy"),
               settings=option_flags.holders_of(options_lib.TrainOptions, flag_values),
               best=option_flags.holders_of(best_checkpoints.BestCheckpoints, flag_values),
               stopping=option_flags.holders_of(early_stopping_options.EarlyStopping,
                                                flag_values),
               backend=backend)

  def value(self, option):
    """The parsed value of the flag of TrainOptions' field `option`."""
    return self.settings[option].value

  def started_by_an_engine(self):
    """Whether a job's engine runs this program (it names the job's strategy, as
    `job_strategy` reads it) or its command line gave --strategy."""
    return self.strategy.present or job_strategy() is not None

  def strategy_and_options(self):
    """(strategy name, its keyword options) from the flags."""
    strategy = traits.of(self.strategy.value).name
    job = job_strategy()
    if job is not None and self.strategy.present and traits.of(job).name != strategy:
      raise errors.ConfigError(
          f"the program was given --strategy={self.strategy.value}, but its job runs "
          f"{job} (the engine's --strategy); drop --strategy from the program's arguments.")
    strategy_options = {}
    for flag in self.backend:
      if not flag.strategies or (strategy in flag.strategies and flag.holder.value is not None):
        strategy_options[flag.option] = flag.holder.value
    if "global_batch_size" in strategy_options:
      strategy_options["batch_size"] = self.value("batch_size")  # The micro-batch.
    return strategy, strategy_options

  def options(self, **values) -> options_lib.TrainOptions:
    """The TrainOptions that the flags set; `values` set fields over them."""
    strategy, strategy_options = self.strategy_and_options()
    stopping = None
    if self.stopping["patience_steps"].value:
      stopping = option_flags.options_from_flags(early_stopping_options.EarlyStopping,
                                                 self.stopping)
    best = None
    if not self.best["keep"].value and (self.best["metric"].present or
                                        self.best["direction"].present):
      raise errors.ConfigError("--best_metric and --best_direction rank the checkpoints that "
                               "--keep_best_checkpoints=N keeps; give it too.")
    if self.best["keep"].value:
      best = option_flags.options_from_flags(best_checkpoints.BestCheckpoints, self.best)
    return option_flags.options_from_flags(
        options_lib.TrainOptions, self.settings, **{
            "strategy": strategy, "strategy_options": strategy_options,
            "best_checkpoints": best, "early_stopping": stopping, **values})


def job_strategy(env=os.environ):
  """The strategy of the job whose task this program is (None outside one): an engine
  names it in the task's environment, not on the program's command line."""
  name = env.get(env_vars.STRATEGY)
  if name is None:
    return None
  if name not in traits.NAMES:
    raise errors.ConfigError(f"${env_vars.STRATEGY}={name!r} is not a strategy; it takes "
                             f"{', '.join(traits.NAMES)}.")
  return name


def define_flags(flag_values=flags.FLAGS, *, strategy="local", batch_size=32,
                 learning_rate=1e-3, train_steps=1000) -> TrainingFlags:
  """Defines the training flags on `flag_values`, with the program's defaults.

  A flag the program defined already with the same name and kind is used as it is (its
  default and help); one of another kind is a ConfigError naming both. In a job's task,
  --strategy and --model_dir default to the job's (the engine names them in the task's
  environment: `contract.env_vars`).
  """
  f = flag_values
  job = job_strategy()
  option_flags.define_flag(_DEFINED_FLAG, name=DEFINED, default=True, flag_values=f,
                           reuse=True)
  defined = TrainingFlags(  # Keywords are evaluated in order: the flags' order.
      strategy=option_flags.define_flag(_STRATEGY_FLAG, name="strategy", default=strategy,
                                        flag_values=f, reuse=True),
      settings=option_flags.define_flags(
          options_lib.TrainOptions, flag_values=f, reuse=True, defaults={
              "train_steps": train_steps, "batch_size": batch_size,
              "learning_rate": learning_rate}),
      best=option_flags.define_flags(best_checkpoints.BestCheckpoints, flag_values=f,
                                     reuse=True),
      stopping=option_flags.define_flags(early_stopping_options.EarlyStopping, flag_values=f,
                                         reuse=True),
      backend=tuple(
          BackendFlag(holder=_define_backend_flag(spec, name=name, default=default,
                                                  strategies=strategies, flag_values=f),
                      option=option, strategies=strategies)
          for spec, name, default, option, strategies in backend_options()))
  for flag in (b for b in defined.backend if b.strategies):
    name, default, owners = flag.holder.name, flag.holder.default, flag.strategies

    def _only_for(v, name=name, owners=owners, default=default):
      return v[name] == default or traits.of(v["strategy"]).name in owners
    flags.register_multi_flags_validator(
        [name, "strategy"], _only_for,
        f"--{name} applies only to {' or '.join(f'--strategy={o}' for o in owners)}; drop "
        f"it or change --strategy.", flag_values=f)
  if job:  # The program's own default, or its own flag's, gives way to the job's.
    f.set_default("strategy", job)
  job_model_dir = os.environ.get(env_vars.MODEL_DIR)
  if job_model_dir:
    f.set_default(defined.settings["model_dir"].name, job_model_dir)
  return defined


def parsed(flag_values=flags.FLAGS) -> bool:
  """Whether the training flags (`define_flags`) are defined and parsed."""
  return DEFINED in flag_values and flag_values.is_parsed()


def options_from_flags(flag_values=flags.FLAGS) -> options_lib.TrainOptions:
  """The TrainOptions that the flags (defined by `define_flags`) set; they check the
  values, naming the flags."""
  return TrainingFlags.of(flag_values).options()
