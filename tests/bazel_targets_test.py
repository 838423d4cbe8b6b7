"""Every test file is a Bazel test target: tests/BUILD read as Bazel reads it."""

import glob as globbing
import os

TESTS = os.path.dirname(os.path.abspath(__file__))


def targets():
  """{name: args} of the py_test targets tests/BUILD defines (Starlark's subset that
  BUILD files use is Python: its rules are recorded, its globs run on the files)."""
  found = {}

  def glob(patterns, exclude=()):
    matched = {os.path.relpath(path, TESTS) for pattern in patterns
               for path in globbing.glob(os.path.join(TESTS, pattern), recursive=True)}
    return sorted(matched - set(glob(exclude) if exclude else ()))

  def py_test(*, name, tags=(), args=(), **_):
    found[name] = {"tags": list(tags), "args": list(args)}

  with open(os.path.join(TESTS, "BUILD")) as build:
    exec(build.read(), {"glob": glob, "py_test": py_test, "py_library": lambda **_: None})
  return found


def test_every_test_file_is_a_target_for_its_unit_tests_and_one_for_its_processes():
  found = targets()
  for path in sorted(globbing.glob(os.path.join(TESTS, "*_test.py"))):
    name = os.path.basename(path)[:-len("_test.py")]
    file = f"tests/{name}_test.py"
    assert name in found, f"{file} has no Bazel target in tests/BUILD"
    assert "manual" not in found[name]["tags"] and file in found[name]["args"]
    processes = found.get(f"{name}_processes")
    assert processes, f"{file} has no {name}_processes target in tests/BUILD"
    assert "manual" in processes["tags"] and file in processes["args"]
  assert "preemption" in found
