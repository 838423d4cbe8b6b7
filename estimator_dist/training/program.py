"""`run_program(main)`: a program's main under absl, our errors as one line and an exit code."""

import logging
import sys

from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.strategies import factory
from estimator_dist.task import preemption
from estimator_dist.training import flags as flags_lib


def run_program(main, *, flag_values=flags.FLAGS, start_strategy=True, command=None):
  """absl's app.run(main) (a bad flag exits 2); a configuration error, divergence or a
  taken port ends the program with its message alone and the exit code the launcher acts on.

  With `start_strategy`, a program that defined the training flags (`define_flags`) and
  runs as a job's task (the engines name the job's strategy in its environment) or was
  given --strategy gets that strategy started before `main` runs, so a collective
  strategy exists before the program builds anything of TensorFlow (a canned Estimator, a Keras model); `train_and_evaluate`
  with the same strategy and options then uses that adapter. `flag_values` holds the
  program's flags; command_line.run parses flags.FLAGS, so another must be parsed by the caller.
  `command`: the estimator-dist command whose lines the errors are (None: a program's).
  """
  def guarded(argv):
    # TensorFlow gave its logger a handler of its own when it was imported before absl set
    # up logging; without it, TensorFlow's lines go through absl's handler, once each.
    logging.getLogger("tensorflow").handlers.clear()
    preemption.watch()  # As early as a program can: a signal before it would end it.
    try:
      if start_strategy and flags_lib.DEFINED in flag_values:
        training_flags = flags_lib.TrainingFlags.of(flag_values)
        if training_flags.started_by_an_engine():
          strategy, strategy_options = training_flags.strategy_and_options()
          factory.create_strategy(strategy, **strategy_options)
      return main(argv)
    except Exception as e:  # pylint: disable=broad-except
      exit_if_ours(e, command)
      raise
  command_line.run(guarded, command=command)


def exit_if_ours(error, command=None):
  """Ends the program with one error line and the exit code the launcher acts on when
  `error` is one of ours (`command`: whose line it is); returns otherwise."""
  kind, message = _ours(error)
  if kind is None:
    return
  command_line.write_error(message, command)
  mailbox_lib.post_verdict(_EXIT_CODES[kind], kind.__name__)
  sys.exit(_EXIT_CODES[kind])


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


_EXIT_CODES = {errors.ConfigError: errors.USAGE_EXIT_CODE,
               errors.TrainingDiverged: errors.DIVERGED_EXIT_CODE,
               errors.PortInUse: errors.PORT_IN_USE_EXIT_CODE,
               errors.CheckpointSaveFailed: 1,
               errors.PeerLost: 1,
               errors.EvaluationStalled: errors.STALLED_EXIT_CODE}
