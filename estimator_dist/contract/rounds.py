"""What the tasks of a program agree on, round by round: the chief decides (the model_dir
and the step of a train() round, the metrics of an evaluate() or a train_and_evaluate(),
the path of an export) and posts it in the job's mailbox; every other task waits for it
there.

Tasks make the same calls in the same order, so the n-th call of a kind on every task is
one round: message `<kind>-<n>` of the mailbox's ROUNDS, which is new for each attempt.
"""

import collections

from estimator_dist import errors
from estimator_dist.contract import mailbox as mailbox_lib

_counts = collections.Counter()


def _mailbox():
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox is None:
    raise errors.ConfigError("an instrumented program's tasks agree through the job's "
                             "mailbox, which `estimator-dist launch` gives them; run the "
                             "program through it.")
  return mailbox


def available():
  """Whether this task has a mailbox to agree through."""
  return mailbox_lib.Mailbox.of_environment() is not None


def next_round(kind):
  """The number of this process's next `kind` round (1, 2, ...)."""
  _counts[kind] += 1
  return _counts[kind]


def publish(kind, number, value):
  """The chief's `value` (JSON) of round `number` of `kind`."""
  _mailbox().post(mailbox_lib.ROUNDS, f"{kind}-{number}", {"value": value})


def wait_for(kind, number):
  """The chief's value of round `number` of `kind`, once it posted it. The launcher ends a
  task that waits for a chief that failed (it stops the job) or hangs (its heartbeats)."""
  return _mailbox().wait(mailbox_lib.ROUNDS, f"{kind}-{number}")["value"]
