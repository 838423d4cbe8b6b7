"""A lost peer ends a task of a synchronous job of several processes, in one line.

TensorFlow's MonitoredSession takes an error from a peer (UnavailableError, AbortedError:
a closed socket, a task that died) for a preemption it can recover from: it closes the
session and creates a new one from the latest checkpoint. That recovery was made for
parameter servers. A task of a synchronous strategy (multi_worker, horovod) comes back at
another step than its peers, and each then waits for the others in a collective for ever:
measured, both tasks stopped beating until the hang check stopped the job. Here the error
ends the task at once, and the launcher restarts the job (--max_restarts).

TensorFlow offers no switch for it: the recovery catches the errors its module names in
`_PREEMPTION_ERRORS` (tensorflow/python/training/monitored_session.py, TensorFlow 2.15),
which `fatal` empties while the task trains.
"""

import contextlib

import tensorflow as tf
from tensorflow.python.training import monitored_session  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import errors


@contextlib.contextmanager
def fatal(adapter):
  """Around one round of training under `adapter`: an error from a peer raises PeerLost,
  where the adapter's tasks must stay in step; nothing changes elsewhere."""
  if not (adapter.synchronous and adapter.task.size > 1):
    yield
    return
  recovered = monitored_session._PREEMPTION_ERRORS  # pylint: disable=protected-access
  monitored_session._PREEMPTION_ERRORS = ()  # pylint: disable=protected-access
  try:
    yield
  except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
    first = (e.message or "").strip().split("\n")[0]  # Not a heading ("Graph execution error:").
    raise errors.PeerLost(
        f"{adapter.task.name} lost a peer in training ({type(e).__name__}"
        f"{'' if not first or first.endswith(':') else ': ' + first}): a {adapter.name} job "
        f"cannot go on without it. The task stops; --max_restarts starts every task again "
        f"from the latest checkpoint.") from e
  finally:
    monitored_session._PREEMPTION_ERRORS = recovered  # pylint: disable=protected-access
