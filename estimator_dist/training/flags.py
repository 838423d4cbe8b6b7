"""absl flags for programs: `define_flags()` and `options_from_flags()`.

Library code takes keyword arguments; only programs define flags, through these.
"""

import logging
import sys

from absl import app
from absl import flags

from estimator_dist import errors
from estimator_dist.strategies import factory
from estimator_dist.strategies import horovod as horovod_options
from estimator_dist.strategies import multi_worker
from estimator_dist.strategies import traits
from estimator_dist.training import decorator
from estimator_dist.task import early_stopping
from estimator_dist.task import evaluation
from estimator_dist.training import options as options_lib
from estimator_dist.task import placement

# Flags that are TrainOptions fields of the same name.
_TRAIN_FLAGS = ("model_dir", "train_steps", "eval_steps", "batch_size", "learning_rate",
                "lr_scaling", "warmup_steps", "save_checkpoints_steps", "eval_throttle_secs",
                "random_seed", "exports_to_keep")
# flag name -> (strategy, adapter option) for the backend options.
_STRATEGY_FLAGS = {
    "num_devices": ("mirrored", "num_devices"),
    "communication": ("multi_worker", "communication"),
    "collective_timeout_secs": ("multi_worker", "collective_timeout_secs"),
    "hvd_compression": ("horovod", "compression"),
    "hvd_reduction": ("horovod", "reduction"),
    "backward_passes_per_step": ("horovod", "backward_passes_per_step"),
    "gradient_predivide_factor": ("horovod", "gradient_predivide_factor"),
    "remote_cluster": ("parameter_server", "remote_cluster"),
    "global_batch_size": ("horovod", "global_batch_size"),
}


_DEFINED = "estimator_dist_training_flags"  # A flag that marks define_flags' flags.


def define_flags(flag_values=flags.FLAGS, *, strategy="local", batch_size=32,
                 learning_rate=1e-3, train_steps=1000):
  """Defines the training flags on `flag_values`, with the program's defaults."""
  f = flag_values
  flags.DEFINE_enum("strategy", strategy, traits.NAMES,
                    "Distribution strategy.", flag_values=f)
  flags.DEFINE_bool(_DEFINED, True, "Internal: the training flags are defined.",
                    flag_values=f)
  flags.DEFINE_string("model_dir", None, "Checkpoint directory shared by all tasks.",
                      flag_values=f)
  flags.DEFINE_integer("train_steps", train_steps, "Global step to train to.", lower_bound=1,
                       flag_values=f)
  flags.DEFINE_integer("eval_steps", None, "Eval batches; default the whole eval set.",
                       lower_bound=1, flag_values=f)
  flags.DEFINE_integer("batch_size", batch_size, "Batch size per worker (per replica).",
                       lower_bound=1, flag_values=f)
  flags.DEFINE_float("learning_rate", learning_rate, "Single-worker learning rate.",
                     lower_bound=0.0, flag_values=f)
  flags.DEFINE_enum("lr_scaling", None, decorator.LR_SCALINGS,
                    "Learning-rate scaling with replicas (default: linear if synchronous, "
                    "none for parameter_server).", flag_values=f)
  flags.DEFINE_integer("warmup_steps", None, "Steps of linear warmup to the scaled rate.",
                       lower_bound=0, flag_values=f)
  flags.DEFINE_integer("save_checkpoints_steps", None, "Checkpoint interval in steps.",
                       lower_bound=1, flag_values=f)
  flags.DEFINE_integer("eval_throttle_secs", 60, "Least seconds between evaluations.",
                       lower_bound=0, flag_values=f)
  flags.DEFINE_integer("random_seed", 0, "Graph seed shared by all tasks.", flag_values=f)
  flags.DEFINE_list("exporters", [], f"Serving exports after evaluations, of "
                    f"{', '.join(evaluation.EXPORTER_KINDS)} (the program passes "
                    f"serving_input_receiver_fn).", flag_values=f)
  flags.register_validator("exporters", lambda v: set(v) <= set(evaluation.EXPORTER_KINDS),
                           f"--exporters takes {', '.join(evaluation.EXPORTER_KINDS)}.",
                           flag_values=f)
  flags.DEFINE_integer("exports_to_keep", 5, "Newest exports the latest and best exporters "
                       "keep.", lower_bound=1, flag_values=f)
  flags.DEFINE_integer("early_stopping_patience_steps", None,
                       "Stop every task when the eval metric has not improved for this "
                       "many steps.", lower_bound=1, flag_values=f)
  flags.DEFINE_string("early_stopping_metric", "loss", "Eval metric early stopping watches.",
                      flag_values=f)
  flags.DEFINE_enum("early_stopping_mode", "min", early_stopping.MODES,
                    "min: the metric should decrease; max: increase.", flag_values=f)
  flags.DEFINE_integer("intra_op_threads", 0, "TensorFlow intra-op threads (0: TF default).",
                       lower_bound=0, flag_values=f)
  flags.DEFINE_integer("inter_op_threads", 0, "TensorFlow inter-op threads (0: TF default).",
                       lower_bound=0, flag_values=f)
  flags.DEFINE_enum("cpu_affinity", "auto", placement.CPU_AFFINITIES,
                    "auto: pin each training process that shares a host with others to its "
                    "own share of the CPUs; none: leave placement to the OS.", flag_values=f)
  flags.DEFINE_integer("num_devices", None, "mirrored: replicas on this machine.",
                       lower_bound=1, flag_values=f)
  flags.DEFINE_enum("communication", "auto", tuple(multi_worker.COMMUNICATIONS),
                    "multi_worker: collective implementation.", flag_values=f)
  flags.DEFINE_float("collective_timeout_secs", None,
                     "multi_worker: seconds before a collective op fails.", flag_values=f)
  flags.DEFINE_enum("hvd_compression", "none", horovod_options.COMPRESSIONS,
                    "horovod: gradient compression.", flag_values=f)
  flags.DEFINE_enum("hvd_reduction", "average", horovod_options.REDUCTIONS,
                    "horovod: how gradients are combined.", flag_values=f)
  flags.DEFINE_integer("backward_passes_per_step", 1,
                       "horovod: micro-batches accumulated per all-reduce.", lower_bound=1,
                       flag_values=f)
  flags.DEFINE_float("gradient_predivide_factor", 1.0,
                     "horovod: divide gradients by this before the sum, the rest after.",
                     flag_values=f)

  flags.DEFINE_integer("global_batch_size", None,
                       "horovod: examples per update, whatever the number of ranks; each "
                       "rank accumulates micro-batches of --batch_size.", lower_bound=1,
                       flag_values=f)
  flags.DEFINE_string("remote_cluster", None,
                      "parameter_server: train as a standalone client of standard TensorFlow "
                      "servers, given as JSON: '{\"worker\": [...], \"ps\": [...]}'.",
                      flag_values=f)

  def _warmup_within_training(v):
    return v["warmup_steps"] is None or v["warmup_steps"] < v["train_steps"]
  flags.register_multi_flags_validator(
      ["warmup_steps", "train_steps"], _warmup_within_training,
      "--warmup_steps must be smaller than --train_steps.", flag_values=f)

  for name, (owner, _) in _STRATEGY_FLAGS.items():
    default = f[name].default

    def _only_for(v, name=name, owner=owner, default=default):
      return v[name] == default or traits.of(v["strategy"]).name == owner
    flags.register_multi_flags_validator(
        [name, "strategy"], _only_for,
        f"--{name} applies only to --strategy={owner}; drop it or change --strategy.",
        flag_values=f)

  def _predivide_needs_average(v):
    return v["gradient_predivide_factor"] == 1.0 or v["hvd_reduction"] == "average"
  flags.register_multi_flags_validator(
      ["gradient_predivide_factor", "hvd_reduction"], _predivide_needs_average,
      "--gradient_predivide_factor needs --hvd_reduction=average.", flag_values=f)


def options_from_flags(flag_values=flags.FLAGS) -> options_lib.TrainOptions:
  """The TrainOptions that the flags (defined by `define_flags`) set."""
  f = flag_values
  if not f["model_dir"].value:
    raise errors.ConfigError("--model_dir is required: a directory every task can reach.")
  strategy, strategy_options = _strategy_from_flags(f)
  values = {name: f[name].value for name in _TRAIN_FLAGS}
  if f["early_stopping_patience_steps"].value:
    values["early_stopping"] = early_stopping.EarlyStopping(
        metric=f["early_stopping_metric"].value, mode=f["early_stopping_mode"].value,
        patience_steps=f["early_stopping_patience_steps"].value)
  return options_lib.TrainOptions(strategy=strategy, strategy_options=strategy_options,
                                  exporters=f["exporters"].value, **values)


def _strategy_from_flags(f):
  """(strategy name, its keyword options) from the flags."""
  strategy = traits.of(f["strategy"].value).name
  strategy_options = {name: f[name].value
                      for name in ("intra_op_threads", "inter_op_threads", "cpu_affinity")}
  for name, (owner, option) in _STRATEGY_FLAGS.items():
    if owner == strategy and f[name].value is not None:
      strategy_options[option] = f[name].value
  if "global_batch_size" in strategy_options:
    strategy_options["batch_size"] = f["batch_size"].value  # The micro-batch.
  return strategy, strategy_options


def run_program(main, *, start_strategy=True):
  """absl's app.run(main); a configuration error, divergence or a taken port ends the
  program with its message alone and the exit code the launcher acts on.

  With `start_strategy`, a program that defined the training flags (`define_flags`) and
  was given --strategy (as the launcher, SLURM and Kubernetes engines give it) gets that
  strategy started before `main` runs, so a collective strategy exists before the program
  builds anything of TensorFlow (a canned Estimator, a Keras model); `train_and_evaluate`
  with the same strategy and options then uses that adapter.
  """
  def guarded(argv):
    # TensorFlow gave its logger a handler of its own when it was imported before absl set
    # up logging; without it, TensorFlow's lines go through absl's handler, once each.
    logging.getLogger("tensorflow").handlers.clear()
    try:
      if start_strategy and _DEFINED in flags.FLAGS and flags.FLAGS["strategy"].present:
        strategy, strategy_options = _strategy_from_flags(flags.FLAGS)
        factory.create_strategy(strategy, **strategy_options)
      return main(argv)
    except Exception as e:  # pylint: disable=broad-except
      kind, message = _ours(e)
      if kind is None:
        raise
      sys.stderr.write(f"error: {message}\n")
      sys.stderr.flush()
      sys.exit(_EXIT_CODES[kind])
  app.run(guarded)


def _ours(error):
  """(kind, message) of one of our errors, also when AutoGraph re-raised it from a
  model_fn that a tf.distribute strategy ran (a StagingError whose message holds ours)."""
  cause = getattr(getattr(error, "ag_error_metadata", None), "cause_message", "").strip()
  for kind in _EXIT_CODES:
    if cause.startswith(f"{kind.__name__}: "):
      return kind, cause[len(kind.__name__) + 2:]
    if isinstance(error, kind):
      return kind, str(error)
  return None, None


_EXIT_CODES = {errors.ConfigError: 2, errors.TrainingDiverged: errors.DIVERGED_EXIT_CODE,
               errors.PortInUse: errors.PORT_IN_USE_EXIT_CODE,
               errors.CheckpointSaveFailed: 1}
