"""Our lines' one prefix: `estimator-dist <command>: ` for a command's, `estimator-dist: `
for the library's in a task, made by command_line alone; the source holds the convention."""

import ast
import io
import os
import re

import pytest

from estimator_dist import command_line
from estimator_dist.contract import summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ("estimator_dist", "benchmarks")
OWNER = os.path.join("estimator_dist", "command_line.py")
# The contract imports nothing of ours: its lines (the summary's, the preload library's
# warning) write the library's prefix, `command_line.line("")`, themselves.
CONTRACT = os.path.join("estimator_dist", "contract") + os.sep
# The prefixes our lines had before there was one, and a prefix written by hand.
_RULES = (
    (re.compile(r"\[(launch|progress|bench|slurm|sweep|k8s|verify)\] "),
     "an old [command] tag"),
    (re.compile(r"\bestimator_dist(\.[\w.]+)?( summary| verify)?: "),
     "an old estimator_dist prefix"),
    (re.compile(r"^error: "), "an error line without our prefix"),
    (re.compile(r"\bestimator-dist( \w+)?: "), "our prefix written by hand"),
)
# Lines of files being changed elsewhere, to be given the prefix by hand: (path, how the
# string starts). Each leaves this set once it has it (the test says when).
PENDING = set()


def _docstrings(tree):
  return {id(node.body[0].value) for node in ast.walk(tree)
          if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
          and node.body and isinstance(node.body[0], ast.Expr)
          and isinstance(node.body[0].value, ast.Constant)}


def _texts(tree):
  """(line, text) of each string the code writes: a literal, or an f-string's first part
  (the start of a line), never a docstring."""
  skipped = _docstrings(tree)
  for node in ast.walk(tree):
    if isinstance(node, ast.JoinedStr):
      skipped.update(id(value) for value in node.values)
      first = node.values[0] if node.values else None
      if isinstance(first, ast.Constant):
        yield node.lineno, first.value
      for value in node.values[1:]:
        if isinstance(value, ast.Constant):
          yield node.lineno, " " + value.value  # Not a line's start.
  for node in ast.walk(tree):
    if (isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in skipped):
      yield node.lineno, node.value


def breaches(root=ROOT, packages=SCANNED):
  """[(path, line, text, rule)] of the strings of `packages` that break the convention."""
  found = []
  for package in packages:
    for directory, _, files in os.walk(os.path.join(root, package)):
      for name in sorted(files):
        path = os.path.join(directory, name)
        relative = os.path.relpath(path, root)
        if not name.endswith(".py") or relative == OWNER:
          continue
        with open(path) as f:
          tree = ast.parse(f.read(), path)
        for line, text in _texts(tree):
          for pattern, rule in _RULES:
            if pattern.search(text) and not (
                relative.startswith(CONTRACT) and text.startswith(command_line.line(""))):
              found.append((relative, line, text.lstrip(), rule))
  return sorted(found)


def _pending(path, text):
  """The entries of PENDING that the string `text` of `path` is."""
  return {entry for entry in PENDING if entry[0] == path and text.startswith(entry[1])}


def test_each_line_of_ours_gets_its_prefix_from_command_line():
  found = breaches()
  unexpected = [f"{path}:{line}: {rule}: {text[:70]!r}" for path, line, text, rule in found
                if not _pending(path, text)]
  assert not unexpected, ("write these lines with command_line.line, write or write_error: "
                          + "; ".join(unexpected))
  applied = sorted(PENDING.difference(*(_pending(path, text) for path, _, text, _ in found)))
  assert not applied, f"these lines have their prefix now; remove them from PENDING: {applied}"


def test_the_check_names_the_file_and_line_of_an_old_prefix(tmp_path):
  package = tmp_path / "pkg"
  package.mkdir()
  (package / "a.py").write_text('"""[launch] in a docstring is fine."""\n'
                                'import sys\n'
                                'sys.stderr.write(f"[launch] {1}\\n")\n'
                                'print("estimator_dist.sweep: done")\n'
                                'print(f"error: {2}")\n'
                                'print("estimator-dist sweep: by hand")\n')
  assert [(path, line) for path, line, _, _ in breaches(str(tmp_path), ("pkg",))] == [
      ("pkg/a.py", 3), ("pkg/a.py", 4), ("pkg/a.py", 5), ("pkg/a.py", 6)]


@pytest.mark.parametrize("command", ["launch", "sweep", "slurm", "k8s", "progress", "verify",
                                     "bench"])
def test_a_command_says_its_name(command):
  assert command_line.line("job done", command) == f"estimator-dist {command}: job done"
  assert command_line.error_line("no --space", command) == (
      f"estimator-dist {command}: error: no --space")


def test_the_library_in_a_task_says_no_command():
  assert command_line.line("exported %s") % "x" == "estimator-dist: exported x"
  out = io.StringIO()
  command_line.write(out, "heartbeat not written")
  assert out.getvalue() == "estimator-dist: heartbeat not written\n"


def test_the_summary_line_has_the_prefix_of_a_task_and_parses():
  assert summary.PREFIX == command_line.line("summary:")
  line = summary.format_line({"strategy": "local", "steps": 20})
  assert line == "estimator-dist: summary: strategy=local steps=20"
  assert summary.parse_line(f"[chief:0] {line}") == {"strategy": "local", "steps": "20"}
  assert summary.parse_line("estimator-dist: summary: none yet") is None


def test_a_bad_flag_is_an_error_line_of_the_command(capsys):
  parse = command_line._parse  # pylint: disable=protected-access
  with pytest.raises(SystemExit) as exited:
    parse(["estimator-dist k8s", "--no_such_flag_here=1"], "k8s")
  assert exited.value.code == 2
  assert capsys.readouterr().err.startswith(
      "estimator-dist k8s: error: Unknown command line flag 'no_such_flag_here'")
