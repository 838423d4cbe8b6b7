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
SLURM's time limit), and a task still running a few seconds past it (a ps, a task that
was not training: nothing acts on the request there) ends itself at once; the previous
complete checkpoint is then the one a rerun resumes from. Without a grace
(`env_vars.PREEMPTION_GRACE_SECS` = 0) a task keeps the signals' default: they end it.
"""

import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import task_env

SIGNALS = (signal.SIGTERM, signal.SIGUSR1)
_PAST_THE_GRACE_SECS = 5  # Then a task that has not ended ends itself.
_requested = None  # The name of the first signal, once one came.
_requested_at = None  # time.monotonic() then.
_ending = None  # The timer that ends the process past the grace.
_ends_after_grace = True
_work_saved = False  # The chief said it saved on the request (preemption_save).
_command = None  # Whose lines this process writes: a command's (a sweep's), else a task's.


class Preempted(SystemExit):
  """Ends a task that saved its work on request, with errors.PREEMPTED_EXIT_CODE; as a
  SystemExit it passes through the program's own code after training, and prints nothing."""

  def __init__(self, code=errors.PREEMPTED_EXIT_CODE):
    super().__init__(code)
    ignore()
    if code:
      mailbox_lib.post_verdict(code, "preempted")


def ignore():
  """The work is saved: from now on the signals are ignored, also while Python ends, which
  sets the handlers it had back to the default (and the sbatch script sends USR1 again,
  srun SIGTERM, until every task has ended; multi_worker's coordination service may have
  set a SIGTERM handler of its own)."""
  if threading.current_thread() is threading.main_thread():
    for s in SIGNALS:
      signal.signal(s, signal.SIG_IGN)


def grace_secs():
  """The grace the engine gives (env_vars.PREEMPTION_GRACE_SECS, default
  task_env.DEFAULT_PREEMPTION_GRACE_SECS); 0: none."""
  value = os.environ.get(env_vars.PREEMPTION_GRACE_SECS,
                         task_env.seconds(task_env.DEFAULT_PREEMPTION_GRACE_SECS))
  try:
    return max(float(value), 0.0)
  except ValueError:
    raise errors.ConfigError(f"{env_vars.PREEMPTION_GRACE_SECS}={value!r} must be a number "
                             f"of seconds (0: no graceful stop).") from None


def watch(*, ends_after_grace=True, command=None):
  """In the main thread of a process with a grace: SIGTERM and SIGUSR1 become a request,
  until the process ends; without a grace, their default. Returns the handlers they had
  before. Called again, it sets them again
  (TensorFlow's coordination service of multi_worker sets a SIGTERM handler of its own).
  `ends_after_grace`: the process ends itself a little past the grace after a request
  (not a sweep, which waits for its trials). `command`: the command this process runs
  (sweep), whose lines its own are; None: a task's."""
  global _ends_after_grace, _command
  if threading.current_thread() is not threading.main_thread():
    return {}
  # A local horovodrun's wrapper blocks or ignores them (jobs/horovodrun.py: shielded).
  signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
  if not grace_secs():
    for s in SIGNALS:
      if signal.getsignal(s) == signal.SIG_IGN:
        signal.signal(s, signal.SIG_DFL)
    return {}
  _ends_after_grace, _command = ends_after_grace, command
  return {s: signal.signal(s, _on_signal) for s in SIGNALS}


@contextlib.contextmanager
def watched(*, ends_after_grace=True, command=None):
  """`watch()` for a while (training in a process that goes on after it, such as a test's
  or a notebook's): then the handlers before, and no request, are back."""
  global _requested, _ending
  if signal.getsignal(signal.SIGTERM) is _on_signal:  # Already, for the whole process.
    yield
    return
  previous = watch(ends_after_grace=ends_after_grace, command=command)
  try:
    yield
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)
    if previous:
      if _ending:
        _ending.cancel()
      _requested = _ending = None


def requested():
  """Why this task was asked to stop (the signal's name), or None."""
  return _requested


def agreed():
  """The tasks agreed on a preemption that another task was asked for: this one acts as if
  asked too (an evaluation running beside its training is abandoned)."""
  global _requested, _requested_at
  if _requested is None:
    _requested, _requested_at = "another task's preemption", time.monotonic()


def remaining_secs():
  """What is left of the grace since the request (all of it before one)."""
  spent = time.monotonic() - _requested_at if _requested else 0.0
  return max(grace_secs() - spent, 0.0)


def work_saved():
  """Says that the chief saved this request's checkpoint (this task's own save, or the
  chief's word that it saved): a task that then outlives its grace, stuck in its end,
  exits as preempted, and its job is resumed from that checkpoint."""
  global _work_saved
  _work_saved = True


def _end_at_once():
  how = (f"exits with code {errors.PREEMPTED_EXIT_CODE} (its work was saved)" if _work_saved
         else "is killed")
  os.write(sys.stderr.fileno(), command_line.line(
      f"{_requested} came {grace_secs() + _PAST_THE_GRACE_SECS:g}s ago and this task has not "
      f"ended: it ends at once and {how}; its threads were here:\n", _command).encode())
  faulthandler.dump_traceback(sys.stderr, all_threads=True)
  if _work_saved:
    mailbox_lib.post_verdict(errors.PREEMPTED_EXIT_CODE, "preempted")
    os._exit(errors.PREEMPTED_EXIT_CODE)  # pylint: disable=protected-access
  os.kill(os.getpid(), signal.SIGKILL)


def _on_signal(signum, _):
  global _requested, _requested_at, _ending
  if _requested is None:
    _requested, _requested_at = signal.Signals(signum).name, time.monotonic()
    if _ends_after_grace:
      _ending = threading.Timer(grace_secs() + _PAST_THE_GRACE_SECS, _end_at_once)
      _ending.daemon = True
      _ending.start()
    # Handlers run between two of the interpreter's steps: no logging lock is taken here.
    os.write(sys.stderr.fileno(), command_line.line(
        f"{time.strftime('%H:%M:%S')} {_requested}: preemption requested; every task stops "
        f"at one agreed step, the chief saves a checkpoint there, and the job exits with "
        f"code {errors.PREEMPTED_EXIT_CODE} (resumable)\n", _command).encode())
