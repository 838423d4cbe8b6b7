"""The user's cache of what the toolkit builds or learns once per machine: the preload
library (`preload`), Horovod's answers about its build (jobs/horovodrun_entry.py)."""

import os

from estimator_dist.contract import env_vars


def directory():
  """The directory env_vars.CACHE names, else $XDG_CACHE_HOME/estimator_dist
  (~/.cache/estimator_dist)."""
  return os.environ.get(env_vars.CACHE) or os.path.join(
      os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "estimator_dist")
