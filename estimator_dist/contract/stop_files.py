"""The files by which a sweep and a run agree on a stop, named in one place.

A sweep leaves STOP_REQUEST in a trial's model_dir (its text says why the trial stops);
the chief leaves STOPPED_MARKER (the step) after an early stop. They are the run's own
state, not one attempt's message (contract/mailbox.py): the sweep knows a trial by its
model_dir alone, and a resumed run must know it stopped early. No TensorFlow here: the
sweep runner reads and writes them in local directories without it, while the task side
(`early_stopping`) uses TensorFlow's file systems, for a model_dir anywhere.
"""

import os

STOPPED_MARKER = "estimator_dist_stopped_early"
STOP_REQUEST = "estimator_dist_stop_request"  # Its text: why.


def stopped_early(model_dir):
  """Whether the local `model_dir` holds the chief's marker of an early stop."""
  return os.path.exists(os.path.join(model_dir, STOPPED_MARKER))
