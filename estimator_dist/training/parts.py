"""The parts of a run: what each feature adds to a task's training.

As orbit's Controller runs the Actions it is given, a `TrainingRun` runs its parts, in the
order its list (made with the run) gives them. A part gives any of:

- `hooks(adapter)`: SessionRunHooks of each round of training (before the adapter's, or
  after them where `after_the_adapters`, and before the user's);
- `saving_listeners(adapter)`: listeners to the chief's saves (before the user's);
- `guard(adapter)`: a context around this task's whole training, entered in order;
- `around_round(adapter)`: a context around each round.

A feature adds a part here, and to the run's list, instead of editing the run. The run
reads back three: the throughput (`Progress`), the stop's step and cause (`StopTogether`)
and whether the chief evaluated beside training (`EvaluationBeside`).
"""

import contextlib
import os

from absl import logging

from estimator_dist import command_line
from estimator_dist.outputs import checkpoints
from estimator_dist.outputs import model_dir_lock
from estimator_dist.strategies import traits
from estimator_dist.task import early_stopping
from estimator_dist.task import evaluation
from estimator_dist.task import own_port
from estimator_dist.task import preemption
from estimator_dist.task import preemption_save
from estimator_dist.training import hooks as hooks_lib
from estimator_dist.training import peer_loss
from estimator_dist.training import profiling


class Part:
  """A part that adds nothing; a feature's part gives what it adds."""

  after_the_adapters = False  # Its hooks run after the adapter's (a round's restart first).

  def hooks(self, adapter):  # pylint: disable=unused-argument
    return ()

  def saving_listeners(self, adapter):  # pylint: disable=unused-argument
    return ()

  def guard(self, adapter):  # pylint: disable=unused-argument
    return contextlib.nullcontext()

  def around_round(self, adapter):  # pylint: disable=unused-argument
    return contextlib.nullcontext()


class ModelDir(Part):
  """The chief is the one writer of the model_dir: its lock (unless the launcher holds
  it), its checkpoints checked (unless the launcher checked them for a job of several
  processes), an earlier early stop's marker cleared, checkpoints kept complete; every
  task checks the model fits its checkpoints."""

  def __init__(self, model_dir, *, strategy):
    self._model_dir, self._strategy = model_dir, strategy

  def hooks(self, adapter):
    return (checkpoints.FitsTheModel(self._model_dir),)

  @contextlib.contextmanager
  def guard(self, adapter):
    if not adapter.task.is_chief:
      yield
      return
    model_dir = self._model_dir
    by_launcher = model_dir_lock.held_by_launcher(model_dir)
    with contextlib.ExitStack() as stack:
      if not by_launcher:
        stack.enter_context(model_dir_lock.held(model_dir, _warn))
      if not by_launcher or traits.of(self._strategy).one_process:
        checkpoints.resume_point(model_dir, _warn)
      early_stopping.clear_marker(model_dir)  # An earlier run's, under the lock.
      stack.enter_context(checkpoints.kept_complete(model_dir, _warn))
      yield


class Divergence(Part):
  """A loss or weights that are not finite end training, and are never saved."""

  def __init__(self, model_dir):
    self._model_dir = model_dir

  def hooks(self, adapter):
    return (hooks_lib.NanLossHook(self._model_dir),)

  def saving_listeners(self, adapter):
    return (hooks_lib.FiniteCheckpoints(self._model_dir),)


class Progress(Part):
  """What the launcher and the user watch: the phase, steps that advance, the heartbeat,
  and the throughput of the final summary (`steps_per_sec`)."""

  def __init__(self, *, last_step, examples_per_step):
    """`last_step()`: the step training goes to; `examples_per_step(adapter)`: the job's
    examples per step (None: not known)."""
    self._last_step, self._examples_per_step = last_step, examples_per_step
    self._throughput = hooks_lib.ThroughputHook()

  @property
  def steps_per_sec(self):
    return self._throughput.steps_per_sec

  def hooks(self, adapter):
    return (hooks_lib.PhaseHook(), hooks_lib.StepAdvances(runs=20 * adapter.runs_per_update),
            self._throughput,
            *hooks_lib.heartbeat_hooks(
                adapter.task, last_step=self._last_step(),
                examples_per_step=lambda: self._examples_per_step(adapter)))


class Profiling(Part):
  """TensorFlow's profiler over --profile_steps on the tasks asked."""

  def __init__(self, *, steps, tasks, model_dir):
    self._steps, self._tasks, self._model_dir = steps, tasks, model_dir

  def hooks(self, adapter):
    return profiling.hooks(adapter.task, steps=self._steps, tasks=self._tasks,
                           model_dir=self._model_dir)


class StopTogether(Part):
  """Every task stops at the same update on the chief's early stop (its conditions) or
  any task's preemption; the chief's save on a preemption is said as it is written.
  `stopped_at` and `preempted` say how the last round stopped. Its hook decides after the
  adapter's: an elastic round that restarts first stops nothing."""

  after_the_adapters = True

  def __init__(self, *, early_stopping_options, conditions, model_dir):
    self._options, self._conditions = early_stopping_options, tuple(conditions)
    self._model_dir = model_dir
    self._hook = None

  @property
  def stopped_at(self):
    return self._hook.stopped_at if self._hook else None

  @property
  def preempted(self):
    return bool(self._hook and self._hook.preempted)

  def hooks(self, adapter):
    if not (self._options or self._conditions or preemption.grace_secs()):
      return ()
    decide = early_stopping.decision(self._options, self._conditions,
                                     os.path.join(self._model_dir, "eval"))
    self._hook = early_stopping.StopTogether(
        adapter, decide=decide if adapter.task.is_chief else None)
    return (self._hook,)

  def saving_listeners(self, adapter):
    return (preemption_save.SaidWhenWritten(),)


class OwnPort(Part):
  """An error about this task's port names it."""

  def guard(self, adapter):
    return own_port.named(adapter.task)


class EvaluationBeside(Part):
  """The chief evaluates beside its training, unless the job has an evaluator task;
  `started` says whether this task did."""

  def __init__(self, evaluations, *, eval_spec, model_dir, throttle_secs):
    self._evaluations, self._eval_spec = evaluations, eval_spec
    self._model_dir, self._throttle_secs = model_dir, throttle_secs
    self.started = False

  def guard(self, adapter):
    task = adapter.task
    if not (task.is_chief and self._eval_spec is not None and
            not task.num_tasks("evaluator")):
      return contextlib.nullcontext()
    self.started = True
    return evaluation.beside_training(self._evaluations, self._model_dir,
                                      throttle_secs=self._throttle_secs)


class PeerLoss(Part):
  """An error from a peer ends a synchronous task's round (`peer_loss`)."""

  def around_round(self, adapter):
    return peer_loss.fatal(adapter)


def _warn(message):
  logging.warning(command_line.line("%s"), message)
