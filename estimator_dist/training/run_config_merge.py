"""The RunConfig of a run: an Estimator's own RunConfig honoured field by field.

Where no flag or keyword set a TrainOptions field (it is None), the Estimator's RunConfig
gives checkpoints, summaries, step logs, the seed and session_config; a field set wins,
even set to the default on purpose (the options know what was set; a RunConfig does not
say which of its fields the program gave, so each of its values counts). The job's
strategy then sets what it needs over them, each field it overrides logged once: its
distribution, the device filters and threads of session_config, and under horovod no
checkpoint, summary or step log on ranks other than 0. A RunConfig's own train_distribute
or eval_distribute (also through experimental_distribute) is replaced by the job's
strategy when both are synchronous (MultiWorkerMirrored or Mirrored under horovod, say) or
both asynchronous; a synchronous one under an asynchronous job, or the other way round,
is a ConfigError.
"""

import os
import re
import tempfile

import tensorflow as tf
from absl import logging
from tensorflow_estimator.python.estimator import run_config as run_config_lib

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.strategies import traits

# TrainOptions field -> (the RunConfig field it sets, RunConfig's default of that field,
# the value without a RunConfig: the seed's also where a RunConfig has none, since
# sharding relies on one seed).
_FROM_OPTIONS = {"random_seed": ("tf_random_seed", None, 0),
                 "keep_checkpoint_max": ("keep_checkpoint_max", 5, 5),
                 "keep_checkpoint_every_n_hours": ("keep_checkpoint_every_n_hours", 10000,
                                                   10000)}
# RunConfig fields that no option sets: the Estimator's, as it gives them.
_CARRIED = ("save_summary_steps", "log_step_count_steps", "session_creation_timeout_secs",
            "checkpoint_save_graph_def", "experimental_max_worker_delay_secs")
_said = set()  # Each line once per process (a run builds an Estimator per round).


def _say(message):
  if message not in _said:
    _said.add(message)
    logging.info(command_line.line("%s"), message)


def strategy_of(distribution):
  """The estimator_dist strategy a tf.distribute strategy object is; None for another."""
  kinds = (("multi_worker", (tf.distribute.MultiWorkerMirroredStrategy,
                             tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy)),
           ("parameter_server", (tf.compat.v1.distribute.experimental.ParameterServerStrategy,)),
           ("mirrored", (tf.distribute.MirroredStrategy, tf.compat.v1.distribute.MirroredStrategy)))
  return next((name for name, classes in kinds if isinstance(distribution, classes)), None)


def own_model_dir(config):
  """The model_dir an Estimator's RunConfig names; None for the temporary directory that
  Estimator (or model_to_estimator, with its Keras weights) made for want of one."""
  path = config.model_dir
  if not path:
    return None
  parent, name = os.path.split(os.path.normpath(path))
  made = (parent == tempfile.gettempdir() and re.fullmatch(r"tmp[a-z0-9_]{8}", name) and
          os.path.isdir(path) and set(os.listdir(path)) <= {"keras"})
  return None if made else path


def checked(config, options):
  """The Estimator's RunConfig `config` (None: none), checked against the job's `options`
  when the run is built: a distribution of another strategy than the job's is refused."""
  if config is None:
    return None
  strategy = options.strategy
  for field in ("train_distribute", "eval_distribute"):
    distribution = getattr(config, field)
    kind = strategy_of(distribution)
    if distribution is not None and not _replaceable(kind, strategy):
      what = (f"a {kind} strategy: {_updates(kind)} updates, the job's are "
              f"{_updates(strategy)}" if kind else "a strategy estimator_dist does not run")
      fix = f" or run the job with --strategy={kind}" if kind else ""
      raise errors.ConfigError(
          f"the Estimator's RunConfig has {field}={type(distribution).__name__} ({what}), "
          f"but the job's strategy is {strategy}: drop {field} from the RunConfig (the job's "
          f"strategy distributes){fix}.")
  if getattr(config._experimental_distribute, "remote_cluster", None):  # pylint: disable=protected-access
    raise errors.ConfigError(
        "the Estimator's RunConfig names a remote_cluster (experimental_distribute): give it "
        "to the parameter_server strategy instead (--remote_cluster).")
  own = own_model_dir(config)
  if own and os.path.normpath(own) != os.path.normpath(options.model_dir):
    _say(f"the Estimator's model_dir {own} is replaced by the job's {options.model_dir}")
  return config


def _replaceable(kind, strategy):
  """Whether the job's `strategy` may stand in for a program's own of `kind`: both keep
  their replicas in step (all-reduce: the same math), or both update asynchronously."""
  return kind is not None and traits.of(kind).synchronous == traits.of(strategy).synchronous


def _updates(strategy):
  return "synchronous" if traits.of(strategy).synchronous else "asynchronous"


def run_config(adapter, options, config=None):
  """The RunConfig of one round under `adapter`: `options`, over the Estimator's RunConfig
  `config` where they are not set, under what the strategy sets."""
  fields = _fields(options, config)
  if config is None:
    return adapter.run_config(options.model_dir, **fields)
  for name in ("train_distribute", "eval_distribute"):
    if getattr(config, name) is not None:
      _say(f"the RunConfig's {name} ({type(getattr(config, name)).__name__}) is replaced by "
           f"the {adapter.name} strategy's, which the job started for this task"
           + (" (evaluation runs in one process)" if name == "eval_distribute" else ""))
  for name in ("device_fn", "protocol"):
    if getattr(config, name):
      _say(f"the RunConfig's {name} is not used: the {adapter.name} strategy places the "
           f"variables and talks to the other tasks")
  fields["session_config"] = _session_config(adapter, config)
  made = adapter.run_config(options.model_dir, **fields)
  task = adapter.task
  if adapter.chief_only_fields and task.is_chief and task.size > 1:  # Said where it is seen.
    _say(f"the {adapter.name} strategy keeps the RunConfig's "
         f"{', '.join(adapter.chief_only_fields)} on the chief only: the other tasks write no "
         f"checkpoints, summaries or step logs")
  changed = [name for name, value in fields.items()
             if name != "session_config" and getattr(made, name) != value]
  if changed:
    _say(f"the {adapter.name} strategy sets "
         f"{', '.join(f'{n}={getattr(made, n)}' for n in changed)} over the RunConfig's on "
         f"{task.role} {task.index}: the chief alone writes checkpoints, summaries and step "
         f"logs")
  return made


def _fields(options, config):
  """The RunConfig keywords of `options`, over the RunConfig `config` (None: none): an
  option set (not None) wins, one unset takes the RunConfig's value as it is, and without
  a RunConfig the fallback."""
  fields = {}
  for option, (field, run_config_default, fallback) in _FROM_OPTIONS.items():
    ours, own = getattr(options, option), getattr(config, field, fallback)
    # The RunConfig's value as it is (its keep_checkpoint_max=None keeps every one).
    fields[field] = ours if ours is not None else own
    if field == "tf_random_seed" and fields[field] is None:
      fields[field] = fallback
    # Said where the RunConfig's value is not its default, which the program likely set.
    if ours is not None and own not in (None, ours, run_config_default):
      _say(f"{field}={ours} (the job's --{option}) over the Estimator's RunConfig's {own}")
  if options.save_checkpoints_steps is not None:
    fields["save_checkpoints_steps"] = options.save_checkpoints_steps
  if config is None:
    return fields
  saves = {"save_checkpoints_steps": config.save_checkpoints_steps,
           "save_checkpoints_secs": config.save_checkpoints_secs}
  if options.save_checkpoints_steps is None:
    fields.update(saves)
  elif saves != {"save_checkpoints_steps": None, "save_checkpoints_secs": 600}:
    _say(f"save_checkpoints_steps={options.save_checkpoints_steps} (the job's "
         f"--save_checkpoints_steps) over the Estimator's RunConfig's "
         f"{', '.join(f'{k}={v}' for k, v in saves.items() if v)}")
  fields.update((name, getattr(config, name)) for name in _CARRIED)
  return fields


def _session_config(adapter, config):
  """The Estimator's session_config with the strategy's device filters and threads (and
  what else the strategy sets) over it; the strategy's alone when the program set none."""
  ours, own = adapter.session_config(), config.session_config
  defaults = (run_config_lib.get_default_session_config(),
              config._get_default_session_config_distributed())  # pylint: disable=protected-access
  if own is None or own in defaults:  # What Estimator or RunConfig filled in, not the program.
    return ours
  merged = tf.compat.v1.ConfigProto()
  merged.CopyFrom(own)
  if ours.device_filters:
    del merged.device_filters[:]
  merged.MergeFrom(ours)
  changed = [field.name for field, value in own.ListFields() if getattr(merged, field.name) != value]
  if changed:
    _say(f"the {adapter.name} strategy sets session_config's {', '.join(changed)} over the "
         f"Estimator's RunConfig's: a task's devices and threads are the job's to place")
  return merged
