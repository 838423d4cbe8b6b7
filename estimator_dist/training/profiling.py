"""--profile_steps=A:B: TensorFlow's profiler over global steps A to B on every training
task (or those of --profile_tasks), for TensorBoard's Profile tab.

Each task records with the profiler of tf.profiler.experimental (tf.compat.v1's
ProfilerHook breaks under MirroredStrategy: tensorflow/tensorflow#24428) into a directory
of its own, from the step at which the global step is A to the one at which it is B,
then copies its trace to model_dir/plugins/profile/steps_A_B/<role>_<index>.xplane.pb:
one profile session whose hosts are the job's tasks, which `tensorboard
--logdir=MODEL_DIR` shows (pip install tensorboard-plugin-profile). A profile that
cannot be taken (another profiler runs) is warned about; training goes on.
"""

import glob
import os
import shutil
import tempfile

import tensorflow as tf
from absl import logging

from estimator_dist import command_line


def session_dir(model_dir, steps):
  return os.path.join(model_dir, "plugins", "profile", f"steps_{steps[0]}_{steps[1]}")


class ProfileSteps(tf.estimator.SessionRunHook):
  """Profiles this task from global step `steps[0]` to `steps[1]`.

  It records from the first step at or after FIRST (so a global step that jumps over a
  narrow window, as a parameter-server worker's does, still gets one) to the first at or
  after LAST. A task whose training began past LAST (a resumed job, a parameter-server
  worker that started after the others had passed it), or ended before FIRST, says so. One
  recording per process: a new round of training (elastic Horovod) saves what an
  interrupted one was recording.
  """

  def __init__(self, *, steps, model_dir, task_name):
    self._first, self._last = steps
    self._target = os.path.join(session_dir(model_dir, steps),
                                task_name.replace(":", "_") + ".xplane.pb")
    self._recording = None  # The directory the profiler writes to, while it records.
    self._done, self._seen = False, None

  def begin(self):
    global _recording  # pylint: disable=global-statement
    if _recording is not None and _recording is not self:
      _recording._save()  # Its round ended without end().
    self._step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return None if self._done else tf.estimator.SessionRunArgs(self._step)

  def after_run(self, run_context, run_values):
    if self._done:
      return
    step = int(run_values.results)
    if self._seen is None and step >= self._last:
      logging.info(command_line.line("this task's training began at step %d, past "
                                     "--profile_steps=%d:%d (a resumed job, or a "
                                     "parameter-server worker that started late); no profile"),
                   step, self._first, self._last)
      self._done = True
    elif self._recording is None and step >= self._first:
      self._start()
    elif self._recording is not None and step >= self._last:
      self._save()
    self._seen = step

  def end(self, session):
    if self._recording is not None:  # Training ended within the steps.
      self._save()
    elif not self._done:
      logging.warning(command_line.line("training ended at step %s, before --profile_steps=%d:%d "
                                        "began; no profile"), self._seen, self._first, self._last)

  def _start(self):
    global _recording  # pylint: disable=global-statement
    self._recording = tempfile.mkdtemp(prefix="estimator_dist_profile_")
    try:
      tf.profiler.experimental.start(self._recording)
      _recording = self
    except Exception as e:  # pylint: disable=broad-except
      logging.warning(command_line.line("no profile of steps %d to %d: %s"), self._first,
                      self._last, e)
      self._forget()

  def _save(self):
    try:
      tf.profiler.experimental.stop()
      (trace,) = glob.glob(os.path.join(self._recording, "plugins", "profile", "*",
                                        "*.xplane.pb"))
      tf.io.gfile.makedirs(os.path.dirname(self._target))
      tf.io.gfile.copy(trace, self._target, overwrite=True)
      logging.info(command_line.line("profiled global steps %d to %d: %s"), self._first,
                   self._last, self._target)
    except Exception as e:  # pylint: disable=broad-except
      logging.warning(command_line.line("the profile of steps %d to %d was not saved: %s"),
                      self._first, self._last, e)
    self._forget()

  def _forget(self):
    global _recording  # pylint: disable=global-statement
    shutil.rmtree(self._recording, ignore_errors=True)
    self._recording, self._done = None, True
    if _recording is self:
      _recording = None


_recording = None  # The ProfileSteps that is recording in this process.


def hooks(task, *, steps, tasks, model_dir):
  """The profiling hook of this training task, if --profile_steps asks for one."""
  name = task.name
  if steps is None or (tasks and name not in tasks) or not task.is_training:
    return []
  return [ProfileSteps(steps=steps, model_dir=model_dir, task_name=name)]
