"""Run by Python at the start of every task of a job the launcher instruments (its
directory is first on the tasks' PYTHONPATH): runs the next `sitecustomize` on sys.path,
which this one shadows, then waits for TensorFlow's import (estimator_dist.instrument).
A site's own that imported TensorFlow (to set its logging or threads, which must come
before a strategy starts) has the job's strategy start right after it."""

import importlib.util
import os
import sys


def _run_the_next_one():
  here = os.path.dirname(os.path.abspath(__file__))
  for entry in sys.path:
    path = os.path.join(entry or os.getcwd(), "sitecustomize.py")
    if os.path.abspath(os.path.dirname(path)) != here and os.path.isfile(path):
      spec = importlib.util.spec_from_file_location("_next_sitecustomize", path)
      spec.loader.exec_module(importlib.util.module_from_spec(spec))
      return


def _instrument():
  try:
    from estimator_dist.instrument import on_import  # pylint: disable=g-import-not-at-top
  except ImportError:  # Not installed where this task runs: the program runs as it is.
    return
  on_import.install()


_run_the_next_one()
_instrument()
