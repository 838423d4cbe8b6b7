"""What the tasks of a program agree on, round by round: the chief decides (the model_dir
and the step of a train() round, the metrics of an evaluate() or a train_and_evaluate(),
the path of an export) and posts it in the job's mailbox; every other task waits for it
there.

Tasks make the same calls in the same order, so the n-th call of a kind on every task is
one round: message `<kind>-<n>` of the mailbox's ROUNDS, which is new for each attempt.
A task that took part in rounds posts, as it exits, how many calls of each kind it made
(`ended-<task>`), so that a round no other task reaches ends the job at once instead of at
the hang timeout: a training task waiting for a round the chief will never make (it ended
without it, or made another call first) fails in one line (`wait_for`), and the launcher
stops a job whose chief is in a round that a training task ended without (`unmatched`).
"""

import atexit
import collections
import os
import time

from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import mailbox as mailbox_lib

_ENDED = "ended-"
_EXIT_CODE = "exit_code"  # In place of the counts, where an engine saw the task exit.
_CHIEF = "chief:0"
# The kinds of calls the chief makes with every worker: a worker missing from one leaves
# the others waiting. The chief evaluates and exports alone (a program may call those on
# the chief only).
_TOGETHER = ("train", "train_and_evaluate")
_POLL_SECS = 0.2
OUTLIVE_SECS = 60  # How long a chief that ended waits for its workers to end.
_counts = collections.Counter()
_me = []  # This process's task name, once it took part in a round.


def _mailbox():
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox is None and os.environ.get(env_vars.MAILBOX):
    raise errors.ConfigError(
        f"the job's mailbox {os.environ[env_vars.MAILBOX]} is not on this host, so its "
        f"tasks cannot agree: the job's model_dir must be a directory every host shares.")
  if mailbox is None:
    raise errors.ConfigError("an instrumented program's tasks agree through the job's "
                             "mailbox, which `estimator-dist launch` gives them; run the "
                             "program through it.")
  return mailbox


def available():
  """Whether this task has a mailbox to agree through."""
  return mailbox_lib.Mailbox.of_environment() is not None


def _calls(kind, count):
  return f"{count} {kind}() call{'s' if count != 1 else ''}"


def next_round(kind, task):
  """The number of this process's next `kind` round (1, 2, ...); `task` (a TaskInfo) is
  this process's, which says at its exit how many calls it made."""
  if not _me:
    _me.append(task.name)
    atexit.register(_say_ended)
  _counts[kind] += 1
  return _counts[kind]


def _say_ended():
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox:
    try:
      mailbox.post(mailbox_lib.ROUNDS, _ENDED + _me[0], dict(_counts))
    except OSError:
      return  # An exit is not held up by a mailbox it cannot write.
    if _me[0] == _CHIEF:
      _outlive_the_workers(mailbox)


def _outlive_the_workers(mailbox):
  """The chief's TensorFlow server holds the job's coordination service: a worker still
  making its last calls after the last round (a predict()) stops for good once the chief
  is gone (`Coordination agent is set to ERROR`), and under an engine without hang checks
  (SLURM) its job never ends. The chief waits, up to OUTLIVE_SECS, for every worker that
  joined to end."""
  workers = [name for name in mailbox.names(mailbox_lib.JOINED) if name.startswith("worker:")]
  deadline = time.monotonic() + OUTLIVE_SECS
  while time.monotonic() < deadline and any(
      mailbox.read(mailbox_lib.ROUNDS, _ENDED + name) is None for name in workers):
    heartbeat.say_waiting(mailbox, _CHIEF)  # Not idle: the hang checks watch the workers.
    time.sleep(_POLL_SECS)


def publish(kind, number, value):
  """The chief's `value` (JSON) of round `number` of `kind`."""
  _mailbox().post(mailbox_lib.ROUNDS, f"{kind}-{number}", {"value": value})


def wait_for(kind, number):
  """The chief's value of round `number` of `kind`, once it posted it; ConfigError once the
  chief ended without it. The launcher ends a task that waits for a chief that failed (it
  stops the job) or hangs (its heartbeats)."""
  mailbox = _mailbox()
  checks = _me and _me[0].startswith("worker:")  # Makes the chief's calls (an evaluator, some).

  def while_waiting():
    if _me:  # The launcher's hang checks count it as working while the chief does.
      heartbeat.say_waiting(mailbox, _me[0])
    if checks:
      _check_reachable(mailbox, kind, number)
  return mailbox.wait(mailbox_lib.ROUNDS, f"{kind}-{number}", poll_secs=_POLL_SECS,
                      while_waiting=while_waiting)["value"]


def _check_reachable(mailbox, kind, number):
  """ConfigError when the chief will never post round `number` of `kind`."""
  ended = _counts_of(mailbox, _CHIEF)
  if ended is not None and _EXIT_CODE in ended:
    raise errors.ConfigError(
        f"{_me[0]} waits for the chief's {kind}() call {number}, but the chief exited with "
        f"code {ended[_EXIT_CODE]} first: the job cannot go on; the chief's error says why.")
  if ended is not None and ended.get(kind, 0) < number:
    why = f"it ended after {_calls(kind, ended.get(kind, 0))}"
  else:
    ahead = [(other, made) for other, made in sorted(_posted(mailbox).items())
             if other in _TOGETHER and made > _counts[other]]
    if not ahead:
      return
    other, made = ahead[0]
    why = (f"it made {other}() call {made} first, where {_me[0]} had made "
           f"{_calls(other, _counts[other])}")
  raise errors.ConfigError(
      f"{_me[0]} made {kind}() call {number}, which the chief never makes: {why}. Every "
      f"task of the program must make the same Estimator calls in the same order (the "
      f"same loop, the same number of rounds on each).")


def exited(mailbox, task, code):
  """An engine's word that `task` exited with `code` (not 0) without saying how many calls
  it made (killed, or failed before its first round): a task that waits for its round
  fails at once, where the engine ends no other task (horovod.spark.run's ranks)."""
  try:
    if mailbox and mailbox.read(mailbox_lib.ROUNDS, _ENDED + task) is None:
      mailbox.post(mailbox_lib.ROUNDS, _ENDED + task, {_EXIT_CODE: code})
  except (OSError, ValueError):
    pass  # An engine's end is not held up by a mailbox it cannot write, or read.


def _posted(mailbox):
  """{kind: the number of its latest round the chief posted}."""
  posted = collections.Counter()
  for name in mailbox.names(mailbox_lib.ROUNDS):
    kind, _, number = name.rpartition("-")
    if not name.startswith(_ENDED) and number.isdigit():
      posted[kind] = max(posted[kind], int(number))
  return posted


def _counts_of(mailbox, name):
  return mailbox.value(mailbox_lib.ROUNDS, _ENDED + name, dict)


def unmatched(mailbox):
  """Why the job cannot go on: a round the chief made that a training task ended without
  (a worker whose loop is shorter than the chief's); None while every round can be met."""
  posted = _posted(mailbox)
  for name in mailbox.names(mailbox_lib.ROUNDS):
    task = name[len(_ENDED):]
    if not name.startswith(_ENDED) or not task.startswith("worker:"):
      continue  # An evaluator makes some of the chief's calls; a ps none.
    counts = _counts_of(mailbox, task) or {}
    for kind, number in sorted(posted.items()):
      if kind in _TOGETHER and counts.get(kind, 0) < number:
        return (f"the chief made {kind}() call {number}, which {task} never made: it "
                f"ended after {_calls(kind, counts.get(kind, 0))}. Every task of the "
                f"program must make the same Estimator calls in the same order.")
  return None
