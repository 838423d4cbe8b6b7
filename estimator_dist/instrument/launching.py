"""The launcher's side of instrumentation: its tasks' PYTHONPATH, and which program a
command runs (the one its tasks instrument unless it imports estimator_dist)."""

import importlib.util
import os
import sys

from estimator_dist.contract import env_vars
from estimator_dist.instrument import on_import

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")


def task_env(env, program):
  """`env` with `site/` first on PYTHONPATH, whose `sitecustomize` runs in every process of
  the task and instruments `program` (its main file) alone."""
  return {**env, env_vars.INSTRUMENT: program,
          "PYTHONPATH": os.pathsep.join(filter(None, [SITE, env.get("PYTHONPATH")]))}


def program_file(command):
  """The main file a command runs (`python file.py ...`, `python -m module ...`); None
  when it cannot tell (another interpreter's options, `-c`, not Python)."""
  if len(command) < 2 or not os.path.basename(command[0]).startswith("python"):
    return None
  if command[1] == "-m" and len(command) > 2:
    # Found as the task's `python -m` finds it: the working directory first.
    saved = list(sys.path)
    sys.path.insert(0, os.getcwd())
    try:
      spec = importlib.util.find_spec(command[2])
    except (ImportError, ValueError):
      return None
    finally:
      sys.path[:] = saved
    return spec.origin if spec else None
  return command[1] if command[1].endswith(".py") else None


def instrumented(command):
  """The main file of `command` when its tasks will instrument it; None otherwise."""
  path = program_file(list(command))
  return path if path and not on_import.program_is_ours(path) else None
