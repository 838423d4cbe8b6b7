"""Compares distribution strategies on this machine, against its own limit.

  python benchmarks/compare_strategies.py --strategies=horovod,multi_worker \\
      --num_workers=1,2 --model=mnist_cnn --output_dir=/tmp/bench

(also `estimator-dist bench ...` without a program). It is `estimator-dist bench` on
model_zoo's program (benchmarks/toolkit_program.py): every strategy and worker count
measured from the tasks' heartbeats for --window_secs after --warmup_steps, against as
many independent copies of the program (the limit), with the table, the recommendation,
results.json, results.png and --project. Beside each toolkit job it runs the same model
written by hand for the same backend (benchmarks/baselines/, run as it is), and Horovod's
variants, and reports the toolkit's rate over theirs. With --data=digits the toolkit's
jobs train --steps to their end, and it reports the time to --target_accuracy.
"""
# Here are the benchmark's flags and its entry, without TensorFlow: --help (its docstring
# above, then the flags) lists them where it is not installed. The jobs, their measurement
# and the report are `comparison`, imported once the flags are parsed.

import os
import sys

if __package__ in (None, ""):  # Run as a script: make the repository importable.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags  # pylint: disable=g-import-not-at-top

from benchmarks import choices
from estimator_dist import command_line
from estimator_dist.bench import program_bench

HOROVOD_VARIANTS = choices.HOROVOD_VARIANTS


def define_flags(flag_values=flags.FLAGS):
  """Defines the benchmark's flags on `flag_values`: bench's, and the model's."""
  f = flag_values
  program_bench.define_flags(f)
  flags.DEFINE_enum("model", "mnist_cnn", choices.MODELS, "Model to train.", flag_values=f)
  flags.DEFINE_enum("data", "synthetic", choices.DATA,
                    "synthetic (throughput) or digits (also time to --target_accuracy).",
                    flag_values=f)
  flags.DEFINE_integer("batch_size", 64, "Batch size per worker.", lower_bound=1,
                       flag_values=f)
  flags.DEFINE_integer("threads_per_worker", 1,
                       "TensorFlow intra-op threads per worker (0: TensorFlow's default).",
                       lower_bound=0, flag_values=f)
  flags.DEFINE_bool("baselines", True, "Also run the hand-written programs (toolkit / "
                    "hand-written).", flag_values=f)
  flags.DEFINE_list("horovod_variants", list(HOROVOD_VARIANTS),
                    f"Horovod options also reported at N > 1: {', '.join(HOROVOD_VARIANTS)}.",
                    flag_values=f)
  flags.DEFINE_integer("steps", 300, "--data=digits: the steps each toolkit job trains, to "
                       "its end.", lower_bound=2, flag_values=f)
  flags.DEFINE_float("target_accuracy", 0.95, "--data=digits: the eval accuracy to reach.",
                     flag_values=f)
  flags.DEFINE_integer("checkpoint_every", 20, "--data=digits: steps between the checkpoints "
                       "whose accuracy is measured.", lower_bound=1, flag_values=f)
  flags.register_validator(
      "horovod_variants", lambda v: all(x in HOROVOD_VARIANTS for x in v),
      f"--horovod_variants takes any of {', '.join(HOROVOD_VARIANTS)}.", flag_values=f)
  flags.register_multi_flags_validator(
      ["warmup_steps", "steps", "data"],
      lambda v: v["data"] != "digits" or v["warmup_steps"] + 2 <= v["steps"],
      "--data=digits: --steps must leave at least two steps after --warmup_steps.",
      flag_values=f)


def run():
  define_flags()
  command_line.run(_main, command="bench")


def _main(argv):
  from benchmarks import comparison  # pylint: disable=g-import-not-at-top
  return comparison.main(argv)


if __name__ == "__main__":
  run()
