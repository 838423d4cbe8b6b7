"""Writes the reference pages of the documentation from the code that defines what they list.

  python scripts/reference_pages.py        # rewrites docs/reference/*.md, docs/changelog.md

Each command's flags come from its absl definitions (the modules `estimator-dist`'s
commands run, estimator_dist/cli.py), the program flags from `ed.define_flags`, the
environment variables from estimator_dist/contract/env_vars.py, the exit codes from
estimator_dist/errors.py and the Python API from the names estimator_dist exports.
tests/reference_pages_test.py fails when a committed page is not what this writes.
"""

import contextlib
import importlib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # Run as a script: make the repository importable.
  sys.path.insert(0, ROOT)

from absl import flags  # pylint: disable=g-import-not-at-top

REFERENCE = os.path.join("docs", "reference")
MARK = ("<!-- Written by scripts/reference_pages.py from the code: do not edit; run "
        "`python scripts/reference_pages.py` after changing what it lists. -->")
PROGRAM_FLAGS = "program-flags.md"


@contextlib.contextmanager
def _outside_a_job():
  """No ESTIMATOR_DIST_* variable while flags are defined: in a job's task they set the
  defaults of --strategy and --model_dir."""
  saved = {k: v for k, v in os.environ.items() if k.startswith("ESTIMATOR_DIST_")}
  for name in saved:
    del os.environ[name]
  try:
    yield
  finally:
    os.environ.update(saved)


def _cell(text):
  return str(text).replace("|", "\\|").replace("\n", " ")


def _default(flag):
  value = flag.default
  if value is None or value == []:
    return ""
  if value == "":
    return '`""`'
  if isinstance(value, bool):
    return "`true`" if value else "`false`"
  if isinstance(value, list):
    value = ",".join(str(v) for v in value)
  return f"`{value}`"


def _kind(flag):
  """The flag's type as a user types it: bounds and the values of an enum."""
  parser = flag.parser
  kind = {"string enum": "one of", "comma separated list of strings": "list"}.get(
      flag.flag_type(), flag.flag_type())
  if getattr(parser, "enum_values", None):
    return f"one of {', '.join(f'`{v}`' for v in parser.enum_values)}"
  # absl hands out one parser for equal bounds, so a float flag's 0.0 may be another's 0:
  # each bound is written as a number, whichever it got.
  lower, upper = (getattr(parser, name, None) for name in ("lower_bound", "upper_bound"))
  if lower is not None and upper is not None:
    return f"{kind}, {lower:g} to {upper:g}"
  if lower is not None:
    return f"{kind} ≥ {lower:g}"
  return kind


def _help(flag):
  """The help absl shows, without the values it puts in front of an enum's."""
  values = getattr(flag.parser, "enum_values", None)
  prefix = f"<{'|'.join(values)}>: " if values else ""
  return flag.help[len(prefix):] if prefix and flag.help.startswith(prefix) else flag.help


def _flag_rows(values, names):
  rows = ["| flag | type | default | meaning |", "| --- | --- | --- | --- |"]
  for name in names:
    flag = values[name]
    shown = f"--[no]{name}" if flag.flag_type() == "bool" else f"--{name}"
    rows.append(f"| `{shown}` | {_cell(_kind(flag))} | {_cell(_default(flag))} | "
                f"{_cell(_help(flag))} |")
  return rows


def _public(values):
  return sorted(n for n in values if not values[n].help.startswith("Internal:"))


def _defined(define):
  values = flags.FlagValues()
  with _outside_a_job():
    define(values)
  return values


# Commands that, without a program, run a checkout's program (its flags listed after theirs).
_CHECKOUT_COMMANDS = {"bench": "benchmarks.compare_strategies"}


def commands():
  """{command: (module, summary)} of `estimator-dist`."""
  from estimator_dist import cli  # pylint: disable=g-import-not-at-top
  return dict(cli._COMMANDS)  # pylint: disable=protected-access


def _program_flag_values():
  from estimator_dist.training import flags as training_flags  # pylint: disable=g-import-not-at-top
  return _defined(training_flags.define_flags)


def command_page(command, module_name, summary):
  from estimator_dist.training import flags as training_flags  # pylint: disable=g-import-not-at-top
  values = _defined(importlib.import_module(module_name).define_flags)
  program = _program_flag_values() if training_flags.DEFINED in values else {}
  own = [n for n in _public(values) if n not in program]
  lines = [f"# estimator-dist {command}", "", MARK, "", summary, "", "```sh",
           f"estimator-dist {command} --flag=value ..."
           + (" -- python train.py" if command in _CHECKOUT_COMMANDS else ""), "```", "",
           *_flag_rows(values, own), ""]
  if program:  # verify: the program flags too, some with defaults of its own.
    changed = [n for n in _public(values) if n in program and
               values[n].default != program[n].default]
    lines += [f"It also takes every [program flag]({PROGRAM_FLAGS}), with these defaults "
              "of its own:", "", *_flag_rows(values, changed), ""]
  if command in _CHECKOUT_COMMANDS:
    checkout = _defined(importlib.import_module(_CHECKOUT_COMMANDS[command]).define_flags)
    lines += [f"Without a program (`estimator-dist {command} --flag=value ...` in a checkout of "
              f"the repository) it runs model_zoo's benchmark, "
              f"`{_CHECKOUT_COMMANDS[command].replace('.', '/')}.py`, whose flags are:", "",
              *_flag_rows(checkout, _public(checkout)), ""]
  return "\n".join(lines)


def program_flags_page():
  values = _program_flag_values()
  return "\n".join([
      "# Program flags", "", MARK, "",
      "A program that calls `ed.define_flags()` takes these flags, and "
      "`ed.options_from_flags()` reads them. The defaults below are `define_flags`'s; a "
      "program passes its own (`ed.define_flags(batch_size=64, train_steps=2000)`). In a "
      "job's task `--strategy` and `--model_dir` default to the job's "
      "(`ESTIMATOR_DIST_STRATEGY`, `ESTIMATOR_DIST_MODEL_DIR`: see "
      "[environment variables](environment.md)).", "",
      *_flag_rows(values, _public(values)), ""])


def environment_variables():
  """[(variable, description)] of contract/env_vars.py, in its order; a variable without a
  comment of its own shares the one above it."""
  path = os.path.join(ROOT, "estimator_dist", "contract", "env_vars.py")
  found, comment, last = [], [], ""
  with open(path) as source:
    for line in source:
      line = line.strip()
      assignment = re.match(r'^[A-Z_]+ = "([A-Z_]+)"', line)
      if line.startswith("#"):
        comment.append(line.lstrip("# "))
      elif assignment:
        last = " ".join(comment) or last
        found.append((assignment.group(1), last))
        comment = []
      else:
        comment = []
  return found


def environment_page():
  rows = ["| variable | who sets it, who reads it, and what it holds |", "| --- | --- |"]
  rows += [f"| `{name}` | {_cell(text)} |" for name, text in environment_variables()]
  return "\n".join([
      "# Environment variables", "", MARK, "",
      "What an engine (the launcher, the sbatch script of `estimator-dist slurm`, the "
      "Kubernetes manifest, Spark, a sweep) tells a task, and what a user may set. A task "
      "also reads the variables of the engine that started it: `TF_CONFIG`, Horovod's and "
      "Open MPI's ranks, a SLURM step's (see [ways of running](../running/index.md)).", "",
      *rows, ""])


def exit_codes_page():
  from estimator_dist import errors  # pylint: disable=g-import-not-at-top
  rows = ["| code | meaning | what to do |", "| --- | --- | --- |"]
  rows += [f"| {_cell(code)} | {_cell(meaning)} | {_cell(todo)} |"
           for code, meaning, todo in errors.EXIT_CODES]
  return "\n".join([
      "# Exit codes", "", MARK, "",
      "Every command and every task run by `ed.run_program` ends with one of these codes "
      "(`estimator_dist/errors.py` names them); the launcher exits with its tasks' code.",
      "", *rows, "",
      "A program's own exit code is passed on as it is, whatever its number, and "
      "`--max_restarts` applies to it: the launcher acts on 3, 75 and 200 (no restart, new "
      "ports, a preemption) only when the toolkit in a task chose that code, which the task "
      "says in the job's mailbox before it exits; otherwise the launcher names the code as "
      "the program's (`exit code 75 is the program's own, not a verdict of estimator_dist`). "
      "Tasks that cannot reach the launcher's mailbox (`--hosts`) have their codes read as "
      "above.", ""])


def api_page():
  import estimator_dist  # pylint: disable=g-import-not-at-top
  exports = estimator_dist._EXPORTS  # pylint: disable=protected-access
  lines = ["# Python API", "", MARK, "",
           "`import estimator_dist as ed` gives these names; each is imported when first "
           "used, so `import estimator_dist` imports no TensorFlow. They come in the order "
           "a program meets them: its training, its flags and main, the options, the "
           "decorator and the strategies, sweeps, then the errors and the task's view.", ""]
  if sorted(API_ORDER) != sorted(estimator_dist.__all__):
    raise ValueError(f"API_ORDER must name every public name once: {estimator_dist.__all__}")
  for name in API_ORDER:
    lines += [f"::: {exports[name]}.{name}", ""]
  return "\n".join(lines)


def changelog_page():
  """CHANGELOG.md, in the site as it is in the repository (its links to docs/ pages made
  the site's)."""
  with open(os.path.join(ROOT, "CHANGELOG.md")) as f:
    return f.read().replace("](docs/", "](")


# The public names in the order a program meets them.
API_ORDER = ("train_and_evaluate", "evaluate", "define_flags", "options_from_flags",
             "run_program", "TrainOptions", "EarlyStopping", "BestCheckpoints",
             "distributed", "STRATEGIES", "create_strategy", "StrategyAdapter", "sweep",
             "SweepOptions", "ConfigError", "TrainingDiverged", "ClusterConfigError",
             "TaskInfo")


def pages():
  """{path under the repository: text} of every reference page."""
  made = {f"{command}.md": command_page(command, module, summary)
          for command, (module, summary) in commands().items()}
  made[PROGRAM_FLAGS] = program_flags_page()
  made["environment.md"] = environment_page()
  made["exit-codes.md"] = exit_codes_page()
  made["api.md"] = api_page()
  return {**{os.path.join(REFERENCE, name): text for name, text in made.items()},
          os.path.join("docs", "changelog.md"): changelog_page()}


def main():
  for path, text in pages().items():
    with open(os.path.join(ROOT, path), "w") as page:
      page.write(text)
    print(f"wrote {path}")


if __name__ == "__main__":
  main()
