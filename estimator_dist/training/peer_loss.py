"""An error from a peer ends a task of a synchronous job of several processes, in one line.

TensorFlow's MonitoredSession takes an error from a peer or a service (UnavailableError,
AbortedError: a closed socket, a task that died, storage that gave up) for a preemption
it can recover from: it closes the session and creates a new one from the latest
checkpoint. That recovery was made for parameter servers. A task of a synchronous
strategy (multi_worker, horovod) comes back at another step than its peers, and each then
waits for the others in a collective for ever: measured, both tasks stopped beating until
the hang check stopped the job. Here the error ends the task at once, and a restart of
the job (the launcher's --max_restarts, a JobSet's --backoff_limit) resumes every task.

TensorFlow offers no switch for it: the recovery catches the errors its module names in
`_PREEMPTION_ERRORS` (tensorflow/python/training/monitored_session.py, TensorFlow 2.15),
which `fatal` empties while the task trains. The module is the process's: the chief's
evaluations beside training go without the recovery too (an error there ends them).
"""

import contextlib

import tensorflow as tf
from tensorflow.python.training import monitored_session  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import errors


@contextlib.contextmanager
def fatal(adapter):
  """Around one round of training under `adapter`: an error from a peer or a service
  raises PeerLost where the adapter's tasks must stay in step (a synchronous strategy of
  several processes); TensorFlow recovers from it as before elsewhere."""
  if not (adapter.synchronous and adapter.task.size > 1):
    yield
    return
  recovered = monitored_session._PREEMPTION_ERRORS  # pylint: disable=protected-access
  try:
    monitored_session._PREEMPTION_ERRORS = ()  # pylint: disable=protected-access
    yield
  except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
    cause = cause_of(e.message)
    raise errors.PeerLost(
        f"{adapter.task.name} stopped on an error from a peer or a service during training "
        f"({type(e).__name__}{': ' + cause if cause else ''}): a task of a {adapter.name} "
        f"job cannot go on alone, its peers would wait for it at another step. The job "
        f"stops; a restart (launch --max_restarts, a JobSet's --backoff_limit) resumes "
        f"every task from the latest checkpoint.") from e
  finally:
    monitored_session._PREEMPTION_ERRORS = recovered  # pylint: disable=protected-access


def cause_of(message):
  """The line of a TensorFlow error's message that says what happened: after the graph's
  "Detected at node" block (a session's errors start "Graph execution error:"), the first
  line that is not a heading ("...:") or a node ("[[{{node ...}}]]")."""
  message = message or ""
  _, node, rest = message.rpartition("\nNode: ")
  text = rest.split("\n", 1)[1] if node and "\n" in rest else message
  return next((line.strip() for line in text.splitlines() if line.strip() and not
               line.strip().endswith(":") and not line.strip().startswith("[[")), "")
