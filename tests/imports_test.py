"""The layout's rules, read from the source: no import circle, no import up the layers, no
oversized module."""

import ast
import os
import subprocess
import sys

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


# The folders of estimator_dist as layers, lowest first: a module imports from its own
# layer or the ones below. Modules directly in the package (its programs and public
# names) are the top layer, but for those of the base, which every layer may use, as it may
# use the contract between engines and tasks (estimator_dist/contract/). Above the base,
# what a job leaves behind (estimator_dist/outputs/: written by tasks, read by the
# launcher and the sweep), then what runs inside a task (estimator_dist/task/).
LAYERS = (("bound_names", "command_line", "contract", "errors", "extras", "lazy_names",
           "option_flags"),
          ("outputs",), ("task",),
          ("strategies",), ("training",), ("instrument",), ("supervision", "watching"),
          ("jobs",), ("engines",), ("verification", "bench"), ("experiments",))


def layer(module):
  """The layer of an estimator_dist module (len(LAYERS) for the top)."""
  part = (module.split(".") + [""])[1]
  return next((i for i, names in enumerate(LAYERS) if part in names), len(LAYERS))


def upward_imports(graph):
  """'a imports b' for every import of `graph` from a layer above the importer's."""
  return sorted(f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
                for module, targets in graph.items() for target in targets
                if target.startswith("estimator_dist.") and layer(target) > layer(module))


def test_no_module_imports_from_a_layer_above_its_own():
  known = modules(packages=("estimator_dist",))
  graph = {name: imports(path, known) for name, path in known.items()}
  found = upward_imports(graph)
  assert not found, "imports up the layers: " + "; ".join(found)


def test_the_layer_check_names_an_import_up_the_layers():
  graph = {"estimator_dist.outputs.tracking": {"estimator_dist.task.watchdog"},
           "estimator_dist.training.run": {"estimator_dist.outputs.tracking"}}
  assert upward_imports(graph) == [
      "estimator_dist.outputs.tracking (layer 1) imports estimator_dist.task.watchdog (layer 2)"]


# Outside task/ and the layers above it that run the training (strategies/, training/),
# the only modules of estimator_dist that import from estimator_dist.task are programs
# that run as a task of a job themselves: the parameter server's task (a server at its own
# address), a sweep's runner (preempted as a task is) and the program verify captures,
# which its runs' tasks train (`verify --train_only`). The launcher and the engines read a
# task only through the contract and the outputs.
RUN_AS_A_TASK = ("estimator_dist.jobs.server", "estimator_dist.experiments.runner",
                 "estimator_dist.verification.program_capture")
MAY_IMPORT_TASK = ("task", "strategies", "training")


def in_folder(module, folder):
  """Whether `module` is estimator_dist's `folder` or in it."""
  return f"{module}.".startswith(f"estimator_dist.{folder}.")


def task_importers(graph):
  """'a imports b' for every import of `graph` from estimator_dist.task by a module
  outside MAY_IMPORT_TASK that is not in RUN_AS_A_TASK."""
  return sorted(f"{module} imports {target}" for module, targets in graph.items()
                for target in targets
                if in_folder(target, "task") and module not in RUN_AS_A_TASK
                and not any(in_folder(module, folder) for folder in MAY_IMPORT_TASK))


def test_only_programs_run_as_a_task_import_from_the_task_folder():
  known = modules(packages=("estimator_dist",))
  graph = {name: imports(path, known) for name, path in known.items()}
  found = task_importers(graph)
  assert not found, ("only programs run as a task import from estimator_dist.task (read a "
                     "task through estimator_dist.contract or estimator_dist.outputs): "
                     + "; ".join(found))


def test_the_package_imports_no_model_zoo_or_benchmarks():
  """They are not installed with it (they run from a checkout)."""
  known = modules()
  found = sorted(f"{name} imports {target}" for name, path in known.items()
                 if name.split(".")[0] == "estimator_dist"
                 for target in imports(path, known)
                 if target.split(".")[0] in ("model_zoo", "benchmarks"))
  assert not found, "; ".join(found)


def test_the_task_importer_check_names_a_launcher_module_that_imports_a_task_one():
  graph = {"estimator_dist.jobs.launcher": {"estimator_dist.task.watchdog",
                                            "estimator_dist.contract.cluster"},
           "estimator_dist.jobs.server": {"estimator_dist.task.own_address"},
           "estimator_dist.training.run": {"estimator_dist.task.evaluation"},
           "estimator_dist.jobs.spec": {"estimator_dist.taskforce"},
           "estimator_dist.cli": {"estimator_dist.task"}}
  assert task_importers(graph) == [
      "estimator_dist.cli imports estimator_dist.task",
      "estimator_dist.jobs.launcher imports estimator_dist.task.watchdog"]


@pytest.mark.parametrize("name,path", sorted(modules(packages=("estimator_dist",)).items()))
def test_module_is_small(name, path):
  with open(path) as f:
    lines = len(f.readlines())
  assert lines <= MAX_LINES, f"{name} has {lines} lines; split it by concern (at most {MAX_LINES})"


# Programs run by the interpreter beside a task or a job by their files, with -S (without
# site-packages, where estimator_dist cannot be imported): the watchdog's companion and
# the namespaces' first process. Each starts in milliseconds.
STANDARD_LIBRARY_ONLY = ("estimator_dist.task.watchdog_companion",
                         "estimator_dist.supervision.namespace_holder")


@pytest.mark.parametrize("name", STANDARD_LIBRARY_ONLY)
def test_a_companion_program_imports_only_the_standard_library(name):
  with open(modules()[name]) as f:
    tree = ast.parse(f.read())
  found = {alias.name.split(".")[0] for node in ast.walk(tree)
           if isinstance(node, ast.Import) for alias in node.names}
  found |= {node.module.split(".")[0] for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)}
  assert found <= sys.stdlib_module_names, sorted(found - sys.stdlib_module_names)


HEAVY_FOR_A_TASK = ("optuna", "matplotlib", "pyspark", "psycopg2")


def _imported(*args, code=0):
  """The top-level modules a fresh interpreter run with `args` imports (-X importtime);
  it must exit with `code`."""
  result = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
  assert result.returncode == code, result.stderr[-3000:]
  return {line.rsplit("|", 1)[1].strip().split(".")[0]
          for line in result.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.processes
def test_a_training_task_imports_no_sweep_or_engine_library():
  found = _imported("-c", "import estimator_dist as ed; ed.train_and_evaluate; "
                          "ed.distributed; ed.options_from_flags; ed.create_strategy")
  assert "tensorflow" in found  # It did import what training needs.
  assert not found & set(HEAVY_FOR_A_TASK), sorted(found & set(HEAVY_FOR_A_TASK))
  assert not _imported("-c", "import estimator_dist") & {"tensorflow", *HEAVY_FOR_A_TASK}


@pytest.mark.processes
@pytest.mark.parametrize("command", ["launch", "sweep", "k8s", "slurm"])
def test_the_launcher_and_the_sweep_runner_import_no_tensorflow(command):
  """Their --help, and every module they run a job or a sweep with."""
  assert "tensorflow" not in _imported("-m", "estimator_dist.cli", command, "--help")
  module = {"launch": "estimator_dist.jobs.launcher",
            "sweep": "estimator_dist.experiments.runner",
            "k8s": "estimator_dist.engines.kubernetes",
            "slurm": "estimator_dist.engines.slurm"}[command]
  assert "tensorflow" not in _imported("-c", f"import {module}")
