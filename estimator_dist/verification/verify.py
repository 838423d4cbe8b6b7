"""`estimator-dist verify`: does the distributed run do the math of one worker?

  estimator-dist verify --module=model_zoo.mnist_cnn --strategy=horovod --num_workers=2
  estimator-dist verify --strategy=horovod --lr_scaling=none -- python their_program.py

Trains the module's model on its `input_fn(params)` for --train_steps steps twice,
from one initial checkpoint, with deterministic ops and without oneDNN's batch-size-
dependent kernels: on one worker at the global
batch (num_workers x --batch_size), and under --strategy on --num_workers workers at
--batch_size each. It prints the learning rate each run used, the largest difference of
every trainable weight, and PASS if the largest relative difference is within --tolerance.

The module provides the model, as `model_fn` or as `estimator` (a canned or
`model_to_estimator` Estimator, or a function of no arguments that builds one, called
after the strategy is started), `input_fn(params)` batched by params["batch_size"] in a
fixed order, and optionally VERIFY_PARAMS, params that switch off randomness which
depends on how a batch is split (dropout). Keep steps x global batch within one epoch
unless the data divides evenly into batches. Keep the steps few (default 10): rounding
differs between batch splits, and given enough steps one max-pool near-tie flips and
shows as a jump in one layer.

A program that never imports estimator_dist is verified as it is: it runs until its first
training call, whose Estimator and training input_fn are trained (`program_capture`), its
batches as they are under --strategy, and the one worker takes them --num_workers at a
time, joined. Its optimizer keeps its own rate: --lr_scaling=none compares the same math.

Here are the command's flags and its entry, without TensorFlow: --help lists the flags
where it is not installed. The runs and their comparison are `verify_runs`.
"""

import dataclasses

from absl import flags

from estimator_dist.training import flags as task_flags
from estimator_dist.training import program


@dataclasses.dataclass(frozen=True, kw_only=True)
class VerifyFlags:
  """The flags of `estimator-dist verify`, as FlagHolders."""
  training: task_flags.TrainingFlags
  module: flags.FlagHolder
  num_workers: flags.FlagHolder
  tolerance: flags.FlagHolder
  reference_learning_rate: flags.FlagHolder
  work_dir: flags.FlagHolder
  train_only: flags.FlagHolder
  join_batches: flags.FlagHolder
  names: frozenset  # Of every flag above: a program run by verify may define its own.


def define_flags(flag_values=flags.FLAGS) -> VerifyFlags:
  """Defines the flags of `estimator-dist verify` on `flag_values`."""
  f = flag_values
  before = set(f)
  defined = dict(
      training=task_flags.define_flags(f, strategy="horovod", batch_size=32,
                                       learning_rate=0.01, train_steps=10),
      module=flags.DEFINE_string("module", None, "Module with model_fn and input_fn(params) "
                                 "(or give a program after --).", flag_values=f),
      num_workers=flags.DEFINE_integer("num_workers", 2, "Workers of the distributed run.",
                                       lower_bound=1, flag_values=f),
      tolerance=flags.DEFINE_float("tolerance", 1e-5, "Largest relative weight difference "
                                   "that passes.", flag_values=f),
      reference_learning_rate=flags.DEFINE_float(
          "reference_learning_rate", None, "Learning rate of the one-worker run (default "
          "--learning_rate).", flag_values=f),
      work_dir=flags.DEFINE_string("work_dir", None, "Where the two runs write (default: a "
                                   "new temp dir).", flag_values=f),
      train_only=flags.DEFINE_bool("train_only", False, "Internal: train --module as one "
                                   "task of a run.", flag_values=f),
      join_batches=flags.DEFINE_integer("join_batches", 1, "Internal: train on this many "
                                        "of the program's batches joined into one.",
                                        lower_bound=1, flag_values=f))
  return VerifyFlags(**defined, names=frozenset(set(f) - before))


def run():
  verify_flags = define_flags()
  program.run_program(lambda argv: _main(argv, verify_flags), flag_values=flags.FLAGS,
                      start_strategy=False, command="verify")  # It starts its own runs.


def _main(argv, verify_flags):
  # TensorFlow's, imported once the flags are parsed: --help needs none installed.
  from estimator_dist.verification import verify_runs  # pylint: disable=g-import-not-at-top
  return verify_runs.main(argv, verify_flags)


if __name__ == "__main__":
  run()
