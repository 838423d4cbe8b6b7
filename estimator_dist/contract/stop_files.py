"""The files by which a job's tasks and a sweep agree on a stop, named in one place.

A sweep leaves STOP_REQUEST in a trial's model_dir (its text says why the trial stops);
the chief leaves STOPPED_MARKER (the step) after an early stop, and SAVED_ON_PREEMPTION
(the step) once it saved on a preemption (`preemption_save`; the launcher reads it too).
No TensorFlow here: the sweep runner and the launcher read and write them in local
directories without it, while the task side (`early_stopping`, `preemption_save`) uses
TensorFlow's file systems, for a model_dir anywhere.
"""

import os

STOPPED_MARKER = "estimator_dist_stopped_early"
STOP_REQUEST = "estimator_dist_stop_request"  # Its text: why.
SAVED_ON_PREEMPTION = "estimator_dist_saved_on_preemption"


def stopped_early(model_dir):
  """Whether the local `model_dir` holds the chief's marker of an early stop."""
  return os.path.exists(os.path.join(model_dir, STOPPED_MARKER))


def saved_on_preemption(model_dir, since):
  """The step the chief saved on a preemption after `since` (time.time()) in the local
  `model_dir`, or None (an earlier run's marker is older)."""
  path = os.path.join(model_dir, SAVED_ON_PREEMPTION)
  try:
    if os.stat(path).st_mtime < since:
      return None
    with open(path) as f:
      return int(f.read())
  except (OSError, ValueError):
    return None
