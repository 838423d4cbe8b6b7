"""The error raised for a configuration that cannot work; its message names the fix."""

import inspect


class ConfigError(ValueError):
  """Bad input to estimator_dist: a flag, an option, TF_CONFIG, a model_fn or input_fn."""


class TrainingDiverged(RuntimeError):
  """The loss or the weights stopped being finite; the message names the step."""


class CheckpointSaveFailed(RuntimeError):
  """Writing to the model_dir failed (a full disk); the message names the checkpoint kept."""


class EvaluationStalled(RuntimeError):
  """An evaluation did not end within its timeout; the message names the probable cause."""


class PeerLost(RuntimeError):
  """A task of a synchronous job of several processes met an error from a peer or a service
  in training, from which TensorFlow would have created its session again (out of step
  with its peers); the message says what the job does then."""


class PortInUse(RuntimeError):
  """Another process holds the port this task must listen on; the message names it."""


# A bad command line or configuration: an unknown flag, a value refused, a model_dir that
# cannot be written (ConfigError), as argparse and horovodrun exit on a bad command line.
USAGE_EXIT_CODE = 2
DIVERGED_EXIT_CODE = 3  # What a program run by run_program exits with when it diverged.
STALLED_EXIT_CODE = 124  # A task (or job) stopped because it made no progress in time.
PORT_IN_USE_EXIT_CODE = 75  # EX_TEMPFAIL: the launcher starts the job again on new ports.
# A job (or task) that saved its work when told to stop (task/preemption.py): run it again
# to resume. Above 128, so Kubeflow's ExitCode restart policy retries it, and above 128 +
# any signal's number, so it never reads as a death by signal.
PREEMPTED_EXIT_CODE = 200

# Every code a command, a job or a task ends with, as users read them: (code, meaning,
# what to do). docs/reference/exit-codes.md is made from it (scripts/reference_pages.py).
EXIT_CODES = (
    ("0", "the job (or command) ended as asked", ""),
    ("1", "a failure: a task's uncaught error, a checkpoint that could not be written, "
     "verify's FAIL, a failed sweep trial", "read the one line printed, then the task's log"),
    (str(USAGE_EXIT_CODE), "a bad command line or configuration: an unknown flag, a value a "
     "flag refuses, a bad TF_CONFIG or model_dir", "fix the flag the message names; nothing ran"),
    (str(DIVERGED_EXIT_CODE), "training diverged (a NaN or infinite loss or weight)",
     "lower the learning rate; the last finite checkpoint is kept"),
    (str(PORT_IN_USE_EXIT_CODE), "a task's port was taken",
     "the launcher starts the job again on new ports (up to 3 times)"),
    (str(STALLED_EXIT_CODE), "no progress in time: a task's heartbeat stopped, an evaluation "
     "or the start-up took too long", "the message names the task and the probable cause"),
    ("128 + N (130, 143)", "stopped by signal N: Ctrl-C, or SIGTERM without a grace "
     "(`--preemption_grace_secs=0`)", "run it again: it resumes from the last checkpoint"),
    (str(PREEMPTED_EXIT_CODE), "preempted: every task saved at one agreed step",
     "run the same command again: it resumes there"),
)


def check_args(fn, kind, allowed, fix):
  """The argument names Estimator passes to `fn`; ConfigError if it is not callable or
  needs one it cannot pass (a parameter without a default, as Estimator itself calls it)."""
  from tensorflow_estimator.python.estimator import util  # pylint: disable=g-import-not-at-top
  if not callable(fn):
    raise ConfigError(f"{kind} must be a function, got {fn!r}.")
  args = [a for a in util.fn_args(fn) if a != "self"]
  unknown = [a for a in _required_args(fn, args) if a not in allowed]
  if unknown:
    raise ConfigError(
        f"{kind} {getattr(fn, '__name__', fn)} needs {unknown}, which Estimator cannot pass; "
        f"it may need only {', '.join(allowed)} (others need a default). {fix}")
  return args


def _required_args(fn, args):
  """The parameters `fn` cannot be called without (a functools.partial's bound ones and
  those with defaults excepted); `args` where no signature can be read."""
  try:
    parameters = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError):
    return args
  return [p.name for p in parameters if p.default is inspect.Parameter.empty and
          p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]


def check_choice(name, value, choices):
  if value not in choices:
    raise ConfigError(f"{name} ({value!r}) must be one of {', '.join(choices)}.")


def check_positive(name, value, allow_none=False):
  if value is None and allow_none:
    return
  if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
    raise ConfigError(f"{name} ({value!r}) must be a positive integer.")


def check_non_negative(name, value):
  if not isinstance(value, int) or isinstance(value, bool) or value < 0:
    raise ConfigError(f"{name} ({value!r}) must be a non-negative integer.")


def check_non_negative_number(name, value):
  if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
    raise ConfigError(f"{name} ({value!r}) must be a non-negative number.")


def check_installed(module, purpose):
  """ConfigError naming the pip extra that installs `module`, when it is not installed."""
  from estimator_dist import extras  # pylint: disable=g-import-not-at-top
  try:
    extras.check_installed(module, purpose)
  except extras.MissingExtra as e:
    raise ConfigError(str(e)) from None
