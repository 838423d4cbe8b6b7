"""Compares distribution strategies on this machine, against its own limit.

  python benchmarks/compare_strategies.py --strategies=horovod,multi_worker \\
      --num_workers=1,2 --model=mnist_cnn --steps=200 --output_dir=/tmp/bench

(also `estimator-dist bench ...`). For every strategy and worker count it trains the
model with estimator_dist on real local processes and reports examples/sec (the
median over windows after warm-up, with the spread), the scaling efficiency against
N independent workers of the same model on the same machine, and the toolkit's
overhead against a hand-written program for the same backend. With --data=digits it
also reports the time to a target eval accuracy. Writes a markdown table to stdout,
results.json and results.png to --output_dir; --project adds a cost-model projection
to more workers.
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
  flags.DEFINE_integer("steps", 200, "Training steps of every job.", lower_bound=2,
                       flag_values=f)
  flags.DEFINE_integer("warmup_steps", 30, "Steps left out of the measurement.", lower_bound=0,
                       flag_values=f)
  flags.DEFINE_integer("window_steps", 10, "Steps per measurement window.", lower_bound=1,
                       flag_values=f)
  flags.DEFINE_integer("threads_per_worker", 1,
                       "TensorFlow intra-op threads per worker (0: TensorFlow's default).",
                       lower_bound=0, flag_values=f)
  flags.DEFINE_string("output_dir", "/tmp/estimator_dist_bench", "Where results go.",
                      flag_values=f)
  flags.DEFINE_bool("baselines", True, "Also run the hand-written programs (overhead).",
                    flag_values=f)
  flags.DEFINE_list("horovod_variants", list(HOROVOD_VARIANTS),
                    f"Horovod options also reported at N > 1: {', '.join(HOROVOD_VARIANTS)}.",
                    flag_values=f)
  flags.DEFINE_float("target_accuracy", 0.95, "--data=digits: the eval accuracy to reach.",
                     flag_values=f)
  flags.DEFINE_integer("checkpoint_every", 20, "--data=digits: steps between the checkpoints "
                       "whose accuracy is measured.", lower_bound=1, flag_values=f)
  flags.DEFINE_bool("project", False, "Project examples/sec and efficiency to 8-256 workers "
                    "with a cost model fitted to the measured jobs.", flag_values=f)
  flags.DEFINE_float("project_latency_us", 0.0, "--project: latency of one message between "
                     "workers, in microseconds.", lower_bound=0.0, flag_values=f)
  flags.DEFINE_float("project_bandwidth_gbps", None, "--project: the network's bandwidth in "
                     "Gbit/s, instead of the one fitted to this machine's runs.",
                     lower_bound=0.0, flag_values=f)

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
      ["warmup_steps", "window_steps", "steps"],
      lambda v: v["warmup_steps"] + 2 * v["window_steps"] <= v["steps"],
      "--steps must leave at least two --window_steps windows after --warmup_steps.",
      flag_values=f)


def run():
  define_flags()
  command_line.run(_main, command="bench")


def _main(argv):
  from benchmarks import comparison  # pylint: disable=g-import-not-at-top
  return comparison.main(argv)


if __name__ == "__main__":
  run()
