"""Preemption: a task told to stop gracefully saves its work first.

SIGTERM or SIGUSR1 (from the launcher, which forwards its own, from Kubernetes, or from
SLURM's `--signal`) marks a request; nothing stops at once. Every training task runs
`early_stopping.StopTogether`, whose agreement carries the request to every task, so all
stop at one global step; the chief's checkpoint saver writes that step as training ends,
and each task exits with `errors.PREEMPTED_EXIT_CODE` (`Preempted`). The same command run
again resumes from that checkpoint.

A repeated signal changes nothing: mpirun and srun forward signals to the ranks they
started, so a rank may get the same one twice. Whoever sent the signal enforces the
grace (the launcher's --preemption_grace_secs, Kubernetes' terminationGracePeriodSeconds,
SLURM's time limit): a task still running when it ends is stopped at once, and the
previous complete checkpoint is the one a rerun resumes from. Without a grace
(`env_vars.PREEMPTION_GRACE_SECS` = 0) a task keeps the signals' default: they end it.
"""

import contextlib
import os
import signal
import sys
import threading
import time

from estimator_dist import errors
from estimator_dist.task import env_vars

SIGNALS = (signal.SIGTERM, signal.SIGUSR1)
DEFAULT_GRACE_SECS = 25
_requested = None  # The name of the first signal, once one came.


class Preempted(SystemExit):
  """Ends a task that saved its work on request, with errors.PREEMPTED_EXIT_CODE; as a
  SystemExit it passes through the program's own code after training, and prints nothing."""

  def __init__(self):
    super().__init__(errors.PREEMPTED_EXIT_CODE)


def grace_secs():
  """The grace the engine gives (env_vars.PREEMPTION_GRACE_SECS, default 25 s); 0: none."""
  value = os.environ.get(env_vars.PREEMPTION_GRACE_SECS, str(DEFAULT_GRACE_SECS))
  try:
    return max(float(value), 0.0)
  except ValueError:
    raise errors.ConfigError(f"{env_vars.PREEMPTION_GRACE_SECS}={value!r} must be a number "
                             f"of seconds (0: no graceful stop).") from None


def watch():
  """In the main thread of a process with a grace: SIGTERM and SIGUSR1 become a request,
  until the process ends; the handlers they had before."""
  if not grace_secs() or threading.current_thread() is not threading.main_thread():
    return {}
  return {s: signal.signal(s, _on_signal) for s in SIGNALS}


@contextlib.contextmanager
def watched():
  """`watch()` for a while (training in a process that goes on after it, such as a test's
  or a notebook's): then the handlers before, and no request, are back."""
  global _requested
  if signal.getsignal(signal.SIGTERM) is _on_signal:  # Already, for the whole process.
    yield
    return
  previous = watch()
  try:
    yield
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)
    if previous:
      _requested = None


def requested():
  """Why this task was asked to stop (the signal's name), or None."""
  return _requested


def _on_signal(signum, _):
  global _requested
  if _requested is None:
    _requested = signal.Signals(signum).name
    # Handlers run between two of the interpreter's steps: no logging lock is taken here.
    os.write(sys.stderr.fileno(), (
        f"{time.strftime('%H:%M:%S')} estimator_dist: {_requested}: preemption requested; "
        f"every task stops at one agreed step, the chief saves a checkpoint there, and the "
        f"job exits with code {errors.PREEMPTED_EXIT_CODE} (resumable)\n").encode())
