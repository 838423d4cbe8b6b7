"""`TrainOptions`: how `train_and_evaluate` trains, one frozen value that checks itself.

Programs get it from their flags (`options_from_flags`); library users pass its fields
as keywords to `train_and_evaluate`, or the value itself as `options=`. No TensorFlow
here: the training flags are made from it, so a command's --help lists them where
TensorFlow is not installed.
"""

import dataclasses
import re
import sys
import types
import warnings
from typing import Mapping, Optional, Tuple

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.option_flags import option
from estimator_dist.outputs import best_checkpoints as best_checkpoints_lib
from estimator_dist.strategies import factory
from estimator_dist.strategies import traits as traits_lib
from estimator_dist.task import early_stopping_options as early_stopping_lib
from estimator_dist.task import evaluation_settings
from estimator_dist.training import rate_options


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainOptions:
  """How to train; a field with a flag says what it does in its help.

  strategy: a strategy name (see `create_strategy`); its program flag --strategy takes
    the program's default (`define_flags`).
  strategy_options: the keyword options of that strategy's adapter (their flags are the
    backends' options'); `backend_options` is its options dataclass, checked once.
  train_steps: one synchronous update is one step. learning_rate: when given, sets the
    params key that the decorator scales (its `lr_param`, "learning_rate" by default);
    lr_scaling, warmup_steps: override the decorator's options when given.
  batch_size: for the logs and examples/sec.
  best_checkpoints: a `BestCheckpoints` (keep, metric, direction), early_stopping: an
    `EarlyStopping` (metric, mode, patience_steps); each with its own flags.
  exporters: of the names (train_and_evaluate's serving_input_receiver_fn exports them)
    or `tf.estimator.Exporter`s.
  random_seed: one seed everywhere keeps the workers' shuffle orders equal, which
    sharding relies on. It, keep_checkpoint_max, keep_checkpoint_every_n_hours and
    save_checkpoints_steps: None (no flag or keyword set them) takes the Estimator's
    RunConfig's, else 0, 5, 10000 hours and RunConfig's own; a value set wins over the
    RunConfig's, even the default chosen on purpose.
  profile_steps: (first, last), or "FIRST:LAST" (see `profiling`).
  """
  strategy: str = "local"
  strategy_options: Mapping[str, object] = dataclasses.field(default_factory=dict)
  model_dir: str = option(kind="string", flag_default=None,
                          help="Checkpoint directory shared by all tasks.")
  train_steps: int = option(kind="integer", lower_bound=1, help="Global step to train to.")
  eval_steps: Optional[int] = option(None, kind="integer", lower_bound=1,
                                     help="Eval batches; default the whole eval set.")
  learning_rate: Optional[float] = option(None, kind="float", lower_bound=0.0,
                                          help="Single-worker learning rate.")
  lr_scaling: Optional[str] = option(
      None, kind="enum", values=rate_options.LR_SCALINGS, help="Learning-rate scaling with "
      "replicas (default: linear if synchronous, none for parameter_server).")
  warmup_steps: Optional[int] = option(None, kind="integer", lower_bound=0,
                                       help="Steps of linear warmup to the scaled rate.")
  batch_size: Optional[int] = option(None, kind="integer", lower_bound=1,
                                     help="Batch size per worker (per replica).")
  save_checkpoints_steps: Optional[int] = option(None, kind="integer", lower_bound=1,
                                                 help="Checkpoint interval in steps.")
  keep_checkpoint_max: Optional[int] = option(
      None, kind="integer", lower_bound=0, help="Newest checkpoints kept; 0 keeps all "
      "(default: the Estimator's RunConfig's, else 5).")
  keep_checkpoint_every_n_hours: Optional[float] = option(
      None, kind="float", help="Also keep one checkpoint of every this many hours "
      "(default: the Estimator's RunConfig's).")
  best_checkpoints: Optional[best_checkpoints_lib.BestCheckpoints] = None
  eval_throttle_secs: int = option(60, kind="integer", lower_bound=0,
                                   help="Least seconds between evaluations.")
  eval_timeout_secs: Optional[float] = option(
      None, kind="float", lower_bound=0.0, help="Stop an evaluation (and fail) after this "
      f"many seconds (0: never); default {evaluation_settings.TIMEOUT_MULTIPLE}x the longest "
      f"so far, at least {evaluation_settings.TIMEOUT_FLOOR_SECS} s.")
  exporters: Tuple[object, ...] = option(
      (), kind="list", flag_default=[], help="Serving exports after evaluations, of "
      f"{', '.join(evaluation_settings.EXPORTER_KINDS)} (the program passes "
      "serving_input_receiver_fn).")
  exports_to_keep: int = option(5, kind="integer", lower_bound=1,
                                help="Newest exports the latest and best exporters keep.")
  early_stopping: Optional[early_stopping_lib.EarlyStopping] = None
  random_seed: Optional[int] = option(
      None, kind="integer", help="Graph seed shared by all tasks (default: the Estimator's "
      "RunConfig's tf_random_seed, else 0).")
  profile_steps: Optional[Tuple[int, int]] = option(
      None, kind="string", help="FIRST:LAST: record TensorFlow's profiler from global step "
      "FIRST to LAST on every training task, into model_dir/plugins/profile for "
      "TensorBoard's Profile tab.")
  profile_tasks: Tuple[str, ...] = option(
      (), kind="list", flag_default=[], help="With --profile_steps: only these tasks "
      "(chief:0,worker:1); default every training task.")

  def __post_init__(self):
    object.__setattr__(self, "strategy", traits_lib.of(self.strategy).name)
    object.__setattr__(self, "strategy_options",
                       types.MappingProxyType(dict(self.strategy_options or {})))
    # Checked once, here; the run's adapter is made with them.
    object.__setattr__(self, "backend_options",
                       factory.options_for(self.strategy, **self.strategy_options))
    if not self.model_dir:
      raise errors.ConfigError("--model_dir is required: model_dir must name a directory "
                               "that every task can reach.")
    option_flags.check_declared(self)
    hours = self.keep_checkpoint_every_n_hours
    if hours is not None and not (isinstance(hours, (int, float)) and hours > 0):
      raise errors.ConfigError(f"--keep_checkpoint_every_n_hours ({hours!r}) must be a "
                               f"positive number of hours, or None.")
    if not isinstance(self.best_checkpoints,
                      (best_checkpoints_lib.BestCheckpoints, type(None))):
      raise errors.ConfigError(f"best_checkpoints must be a BestCheckpoints(keep=..., metric=..., "
                               f"direction=...), got {self.best_checkpoints!r}.")
    exporters = self.exporters or ()
    if isinstance(exporters, str) or _is_exporter(exporters):  # One of them.
      exporters = (exporters,)
    object.__setattr__(self, "exporters", tuple(exporters))
    unknown = [e for e in self.exporters if not _is_exporter(e) and
               e not in evaluation_settings.EXPORTER_KINDS]
    if unknown:
      raise errors.ConfigError(
          f"--exporters takes {', '.join(evaluation_settings.EXPORTER_KINDS)} (or exporters= "
          f"tf.estimator.Exporters), not {', '.join(map(repr, unknown))}.")
    if not isinstance(self.early_stopping, (early_stopping_lib.EarlyStopping, type(None))):
      raise errors.ConfigError(f"early_stopping must be an EarlyStopping(metric=..., mode=..., "
                               f"patience_steps=...), got {self.early_stopping!r}.")
    if self.profile_steps is not None:
      object.__setattr__(self, "profile_steps", _checked_steps(self.profile_steps))
      if self.profile_steps[0] >= self.train_steps:
        raise errors.ConfigError(f"--profile_steps starts at step {self.profile_steps[0]}, "
                                 f"which training (to step {self.train_steps}) never reaches.")
    object.__setattr__(self, "profile_tasks", _checked_tasks(self.profile_tasks))
    if self.warmup_steps is not None and self.warmup_steps >= self.train_steps:
      raise errors.ConfigError(f"warmup_steps ({self.warmup_steps}) must be smaller than "
                               f"train_steps ({self.train_steps}): lower --warmup_steps or "
                               f"raise --train_steps.")

  def replace(self, **changes) -> "TrainOptions":
    return dataclasses.replace(self, **changes)

  # Until this release `options_from_flags()` returned a dict of train_and_evaluate's
  # keywords; programs that unpack it (`**options`) or index it (`options["batch_size"]`)
  # keep working, warned, for this release. keys() yields every field, each one a keyword
  # of train_and_evaluate, which makes the same TrainOptions again: the same training.
  def keys(self):
    warnings.warn(
        "options_from_flags() returns a TrainOptions, not a dict: pass it as "
        "train_and_evaluate(..., options=ed.options_from_flags()) instead of **options; "
        "the dict form goes away in the next release.", DeprecationWarning, stacklevel=2)
    return [_FieldName(f.name) for f in dataclasses.fields(self)]

  def __getitem__(self, key):
    if not isinstance(key, _FieldName):  # Not part of **options, which keys() warned of.
      warnings.warn(
          f"options[{key!r}] reads a TrainOptions as a dict: read options.{key} instead; "
          f"the dict form goes away in the next release.", DeprecationWarning, stacklevel=2)
    if key not in {f.name for f in dataclasses.fields(self)}:
      raise KeyError(key)
    return getattr(self, key)


def _is_exporter(value):
  """Whether `value` is a tf.estimator.Exporter: none is before TensorFlow's estimator
  is imported, so checking imports nothing."""
  exporter = sys.modules.get("tensorflow_estimator.python.estimator.exporter")
  return exporter is not None and isinstance(value, exporter.Exporter)


def _checked_steps(steps):
  """(first, last) of "A:B" or of a pair; ConfigError naming the form otherwise."""
  text = steps if isinstance(steps, str) else ":".join(map(str, steps or ()))
  try:
    first, last = (int(part) for part in text.split(":"))
  except (TypeError, ValueError):
    first = last = None
  if first is None or not 0 <= first < last:
    raise errors.ConfigError(f"--profile_steps={text}: give FIRST:LAST global steps, "
                             f"0 <= FIRST < LAST (e.g. 100:110).")
  return first, last


def _checked_tasks(tasks):
  """The task names of --profile_tasks ("chief:0", "worker:1"); ConfigError otherwise."""
  tasks = tuple(tasks or ())
  wrong = [t for t in tasks if not re.fullmatch(r"(chief|worker|evaluator):\d+", t)]
  if wrong:
    raise errors.ConfigError(f"--profile_tasks={','.join(tasks)}: {', '.join(wrong)} is not "
                             f"a training task; name them ROLE:INDEX, e.g. chief:0,worker:1.")
  return tasks


class _FieldName(str):
  """A field name that TrainOptions.keys() gave: `**options` reads the fields by these."""
