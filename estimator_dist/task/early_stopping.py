"""Early stopping that stops every task at the same global step.

The chief decides, from the evaluations written to `model_dir/eval` (by the evaluation
that runs beside training, or by the evaluator task): an `EarlyStopping` option (no
improvement of a metric for `patience_steps`) or the condition of a
`tf.estimator.experimental.stop_if_*` hook given in `hooks`. TensorFlow's own hooks
stop only the chief (a worker then waits in an all-reduce until a timeout). Here every
task runs `StopTogether`: every `check_every_updates` updates of the weights, all of them
run the adapter's `stop_requested` op at the same step (an all-reduce of the chief's
request for the synchronous strategies, a variable on a ps for parameter_server) and stop
together when it says so. Updates, not session runs: under gradient accumulation the
ranks make different numbers of runs per update. The chief then leaves a marker, which ends the evaluator task.
A sweep stops a trial it prunes the same way: it leaves a stop request in the model_dir,
which the chief of a job told to watch for one (`env_vars.TRIAL`) takes as
its reason. Any task asked to stop by a signal (`preemption`) requests a stop the same way,
with a larger value, so every task learns that this stop is a preemption, not the end.
"""

import os
import time

import tensorflow as tf
from absl import logging
from tensorflow_estimator.python.estimator import early_stopping as tf_early_stopping

from estimator_dist import command_line
from estimator_dist.contract import env_vars
from estimator_dist.contract import stop_files
from estimator_dist.task import preemption

# What a task feeds into the agreement; the adapters sum (or take the largest of) them.
_END, PREEMPT = 1, 2
_TF_STOP_HOOKS = (tf_early_stopping._StopOnPredicateHook,  # pylint: disable=protected-access
                  tf_early_stopping._CheckForStoppingHook,  # pylint: disable=protected-access
                  tf_early_stopping._MultiWorkerEarlyStoppingHook)  # pylint: disable=protected-access


def split_hooks(hooks):
  """(the other hooks, the stop conditions of TensorFlow's early-stopping hooks)."""
  others, conditions = [], []
  for hook in hooks:
    if isinstance(hook, _TF_STOP_HOOKS):
      # A worker's hook has no condition, but it takes part in the agreement.
      conditions.append(getattr(hook, "_should_stop_fn", None) or (lambda: False))
    else:
      others.append(hook)
  return others, conditions


class StopTogether(tf.estimator.SessionRunHook):
  """Run by every task: all tasks learn the chief's decision, or any task's preemption, at
  the same update (`preempted` then says which)."""

  def __init__(self, adapter, *, decide=None, check_every_updates=10, decide_every_secs=1.0):
    self._adapter = adapter
    self._decide = decide  # On the chief: a function giving a reason to stop, or None.
    # This task's session runs per check: its runs per update (its share of the micro-
    # batches of one update) times the updates, so every task checks after the same update.
    self._every = check_every_updates * adapter.runs_per_update
    self._decide_every_secs = decide_every_secs
    self.stopped_at = None
    self.preempted = False

  def begin(self):
    self._requested = tf.compat.v1.placeholder_with_default(0, (), name="stop_requested")
    self._agreed = self._adapter.stop_requested(self._requested)
    self._global_step = tf.compat.v1.train.get_global_step()

  def after_create_session(self, session, coord):
    self._runs, self._last_decision, self._reason = 0, 0.0, None
    preemption.watch()  # Over the handler multi_worker's coordination service has set.

  def after_run(self, run_context, run_values):
    self._runs += 1
    if self._runs % self._every:
      return
    failure = None
    if self._decide and time.monotonic() - self._last_decision >= self._decide_every_secs:
      try:
        self._reason = self._reason or self._decide()
      except Exception as e:  # pylint: disable=broad-except
        failure = e  # Every task stops with the chief, then the chief raises.
        self._reason = f"deciding failed: {e}"
      self._last_decision = time.monotonic()
    request = PREEMPT if preemption.requested() else _END if self._reason else 0
    agreed, step = run_context.session.run(
        [self._agreed, self._global_step], feed_dict={self._requested: request})
    if failure is not None:
      raise failure
    if agreed > 0:
      self.stopped_at, self.preempted = int(step), agreed >= PREEMPT
      if self.preempted:
        preemption.agreed()
        logging.warning(command_line.line("preemption: every task stops at global step %d"),
                        step)
      else:
        logging.warning(command_line.line("early stopping at global step %d%s"), step,
                        f": {self._reason}" if self._reason else " (the chief asked)")
      run_context.request_stop()


def decision(options, conditions, eval_dir):
  """The chief's decision function (None without a stop condition)."""
  if options is None and not conditions:
    return None

  def decide():
    reason = options.reason(eval_dir) if options is not None else None
    for condition in conditions:
      if reason is None and (held := condition()):  # A condition may say why.
        reason = held if isinstance(held, str) else (
            "the condition of a tf.estimator.experimental.stop_if_* hook held")
    return reason
  return decide


def requested_stop(model_dir):
  """A condition that holds once a stop request is left in model_dir (by a sweep whose
  pruner stops this trial); its text says why. None unless the job was told to watch
  for one (env_vars.TRIAL)."""
  if not os.environ.get(env_vars.TRIAL):
    return None
  path = os.path.join(model_dir, stop_files.STOP_REQUEST)

  def requested():
    if not tf.io.gfile.exists(path):
      return None
    with tf.io.gfile.GFile(path) as f:
      return f.read().strip() or "a stop was requested"
  return requested


def mark_stopped(model_dir, step):
  """Left by the chief after an early stop: the evaluator task ends at this step."""
  with tf.io.gfile.GFile(os.path.join(model_dir, stop_files.STOPPED_MARKER), "w") as f:
    f.write(str(step))


def clear_marker(model_dir):
  """Removes an earlier run's marker (the chief, before it trains)."""
  path = os.path.join(model_dir, stop_files.STOPPED_MARKER)
  if tf.io.gfile.exists(path):
    tf.io.gfile.remove(path)


def written_since(path, since):
  """Whether the marker at `path` was written at or after `since` (time.time()): an
  earlier run's is older."""
  try:
    return tf.io.gfile.stat(path).mtime_nsec / 1e9 >= since
  except tf.errors.OpError:
    return False


def stopped_at(model_dir, since):
  """The step of an early stop marked after `since` (time.time()), or None."""
  path = os.path.join(model_dir, stop_files.STOPPED_MARKER)
  if not written_since(path, since):
    return None
  try:
    with tf.io.gfile.GFile(path) as f:
      return int(f.read())
  except (tf.errors.OpError, ValueError):
    return None
