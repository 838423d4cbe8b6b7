"""Runs pytest for a Bazel py_test: the arguments are pytest's, paths from the workspace root."""

import os
import sys

import pytest

if __name__ == "__main__":
  # This file is tools/bazel/pytest_main.py in the runfiles tree of the workspace.
  os.chdir(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
  status = pytest.main(sys.argv[1:])
  # A file whose tests all start processes has none left by `-m 'not processes'`: it was
  # still imported and collected, which is what its unit target checks.
  sys.exit(0 if status == pytest.ExitCode.NO_TESTS_COLLECTED else status)
