"""The launcher's side of instrumentation: its tasks' PYTHONPATH, and which program a
command runs (the one its tasks instrument unless it imports estimator_dist)."""

import importlib.util
import os
import re
import sys

from estimator_dist.contract import env_vars

_IMPORTS_US = re.compile(r"^\s*(import|from)\s+estimator_dist\b", re.MULTILINE)
SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")
# Python that prints SITE as the Python running it finds it (a job script's, on its nodes).
PRINT_SITE = ("import os, estimator_dist.instrument as i; "
              "print(os.path.join(os.path.dirname(i.__file__), 'site'))")


def task_env(env, program):
  """`env` with `site/` first on PYTHONPATH, whose `sitecustomize` runs in every process of
  the task and instruments `program` (its main file) alone."""
  return {**env, env_vars.INSTRUMENT: program,
          "PYTHONPATH": os.pathsep.join(filter(None, [SITE, env.get("PYTHONPATH")]))}


def python_of(command):
  """The `python` a command runs, as the machine that runs it finds it (a SLURM node, a
  container image): the command's own, else python3 for a program that is not Python."""
  return command[0] if os.path.basename(command[0]).startswith("python") else "python3"


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
  return path if path and not program_is_ours(path) else None


def program_is_ours(path):
  """Whether the program at `path` imports estimator_dist (and so starts what it needs);
  one whose source cannot be read counts as ours: it is left alone."""
  try:
    with open(path, errors="replace") as f:
      return bool(_IMPORTS_US.search(f.read()))
  except (OSError, TypeError):
    return True
