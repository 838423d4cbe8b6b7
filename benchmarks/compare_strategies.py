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
from estimator_dist.strategies import traits

STRATEGIES, HOROVOD_VARIANTS = choices.STRATEGIES, choices.HOROVOD_VARIANTS


def define_flags(flag_values=flags.FLAGS):
  """Defines the benchmark's flags on `flag_values`."""
  f = flag_values
  flags.DEFINE_list("strategies", list(STRATEGIES), "Strategies to compare.", flag_values=f)
  flags.DEFINE_list("num_workers", ["1", "2"], "Worker counts to run each strategy with.",
                    flag_values=f)
  flags.DEFINE_enum("model", "mnist_cnn", choices.MODELS, "Model to train.", flag_values=f)
  flags.DEFINE_enum("data", "synthetic", choices.DATA,
                    "synthetic (throughput) or digits (also time to --target_accuracy).",
                    flag_values=f)
  flags.DEFINE_integer("batch_size", 64, "Batch size per worker.", lower_bound=1,
                       flag_values=f)
  flags.DEFINE_integer("warmup_steps", 30, "Global steps each job trains before its "
                       "measurement starts.", lower_bound=0, flag_values=f)
  flags.DEFINE_float("window_secs", 20, "Seconds each job is measured for.", lower_bound=2,
                     flag_values=f)
  flags.DEFINE_float("timeout_secs", 600, "A job not measured this long after its start is "
                     "stopped, and reported unmeasured.", lower_bound=10, flag_values=f)
  flags.DEFINE_integer("steps", 300, "--data=digits: the steps each toolkit job trains, to "
                       "its end.", lower_bound=2, flag_values=f)
  flags.DEFINE_integer("threads_per_worker", 1,
                       "TensorFlow intra-op threads per worker (0: TensorFlow's default).",
                       lower_bound=0, flag_values=f)
  flags.DEFINE_string("output_dir", "/tmp/estimator_dist_bench", "Where results go.",
                      flag_values=f)
  flags.DEFINE_bool("baselines", True, "Also run the hand-written programs (toolkit / "
                    "hand-written).", flag_values=f)
  flags.DEFINE_list("horovod_variants", list(HOROVOD_VARIANTS),
                    f"Horovod options also reported at N > 1: {', '.join(HOROVOD_VARIANTS)}.",
                    flag_values=f)
  flags.DEFINE_float("target_accuracy", 0.95, "--data=digits: the eval accuracy to reach.",
                     flag_values=f)
  flags.DEFINE_integer("checkpoint_every", 20, "--data=digits: steps between the checkpoints "
                       "whose accuracy is measured.", lower_bound=1, flag_values=f)
  flags.DEFINE_bool("project", False, "Project examples/sec and efficiency to 8-256 workers "
                    "with a cost model fitted to the measured jobs: the model's compute and "
                    "the bytes of its trainable variables.", flag_values=f)
  flags.DEFINE_float("project_latency_us", 0.0, "--project: latency of one message between "
                     "workers, in microseconds.", lower_bound=0.0, flag_values=f)
  flags.DEFINE_float("project_bandwidth_gbps", None, "--project: the links' bandwidth in "
                     "Gbit/s, instead of the one fitted to this machine's jobs.",
                     lower_bound=0.001, flag_values=f)

  def _benchmarked(names):
    return names and all(s in traits.NAMES and traits.of(s).name in STRATEGIES for s in names)
  flags.register_validator(
      "strategies", _benchmarked,
      f"--strategies takes a comma-separated list of {', '.join(STRATEGIES)}.", flag_values=f)
  flags.register_validator(
      "num_workers", lambda v: v and all(n.isdigit() and int(n) > 0 for n in v),
      "--num_workers takes a comma-separated list of positive integers, e.g. 1,2.",
      flag_values=f)
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
