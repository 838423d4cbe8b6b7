"""The layout's rules, read from the source: no import circle, no oversized module."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("estimator_dist", "model_zoo", "benchmarks")
MAX_LINES = 300


def modules(root=ROOT, packages=PACKAGES):
  """{module name: path} of every Python module in `packages`."""
  found = {}
  for package in packages:
    for directory, _, files in os.walk(os.path.join(root, package)):
      for name in files:
        if name.endswith(".py"):
          path = os.path.join(directory, name)
          parts = os.path.relpath(path, root)[:-3].split(os.sep)
          if parts[-1] == "__init__":
            parts = parts[:-1]
          found[".".join(parts)] = path
  return found


def imports(path, known):
  """The modules of `known` that the module at `path` imports, anywhere in its body."""
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  targets = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      targets.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      for alias in node.names:
        child = f"{node.module}.{alias.name}"
        targets.add(child if child in known else node.module)
  return {t for t in targets if t in known}


def circles(graph):
  """Every import circle of `graph` ({module: imported modules}), each as a list."""
  found, state, stack = [], {}, []

  def visit(module):
    state[module] = "open"
    stack.append(module)
    for target in sorted(graph.get(module, ())):
      if state.get(target) == "open":
        found.append(stack[stack.index(target):] + [target])
      elif target not in state:
        visit(target)
    stack.pop()
    state[module] = "done"

  for module in sorted(graph):
    if module not in state:
      visit(module)
  return found


def test_no_import_circle_counting_imports_inside_functions():
  known = modules()
  graph = {name: imports(path, known) for name, path in known.items()}
  found = circles(graph)
  assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


def test_the_circle_finder_finds_a_circle_through_a_function_import(tmp_path):
  package = tmp_path / "pkg"
  package.mkdir()
  (package / "__init__.py").write_text("")
  (package / "a.py").write_text("from pkg import b\n")
  (package / "b.py").write_text("def f():\n  from pkg import a\n")
  known = modules(str(tmp_path), ("pkg",))
  graph = {name: imports(path, known) for name, path in known.items()}
  assert circles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]


@pytest.mark.parametrize("name,path", sorted(modules(packages=("estimator_dist",)).items()))
def test_module_is_small(name, path):
  with open(path) as f:
    lines = len(f.readlines())
  assert lines <= MAX_LINES, f"{name} has {lines} lines; split it by concern (at most {MAX_LINES})"
