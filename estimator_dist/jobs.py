"""A job's tasks as the user describes them, checked the same way by every engine."""

from absl import flags

from estimator_dist import errors
from estimator_dist.strategies import factory


def define_flags(num_workers_help="Training processes (mirrored: replicas)."):
  """The flags that describe a job's tasks, shared by launch, k8s and slurm."""
  flags.DEFINE_enum("strategy", "multi_worker", factory.STRATEGIES + tuple(factory.ALIASES),
                    "Distribution strategy; passed to the program as --strategy.")
  flags.DEFINE_integer("num_workers", 2, num_workers_help, lower_bound=1)
  flags.DEFINE_integer("num_ps", None, "parameter_server: ps tasks (default 1).", lower_bound=0)
  flags.DEFINE_bool("evaluator", False, "multi_worker, parameter_server: add an evaluator.")


def default_num_ps(strategy, num_ps):
  """`num_ps`, or 1 for parameter_server and 0 for the others when it is None."""
  if num_ps is None:
    return 1 if strategy == "parameter_server" else 0
  return num_ps


def check_command(command):
  if not command:
    raise errors.ConfigError(
        "give the program to run after --, e.g. -- python -m model_zoo.mnist_cnn")


def check_topology(strategy, num_workers, num_ps, evaluator):
  """Raises ValueError for a launch that the strategy cannot run."""
  if strategy == "parameter_server" and num_ps == 0:
    raise errors.ConfigError("--strategy=parameter_server needs --num_ps of at least 1.")
  if strategy != "parameter_server" and num_ps:
    raise errors.ConfigError(f"--num_ps={num_ps} applies only to --strategy=parameter_server.")
  if evaluator and strategy not in ("multi_worker", "parameter_server"):
    raise errors.ConfigError(
        f"--evaluator applies to multi_worker and parameter_server, not {strategy}.")
  if strategy == "local" and num_workers != 1:
    raise errors.ConfigError("--strategy=local trains in one process; use --num_workers=1.")
