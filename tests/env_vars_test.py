"""The environment variables engines and tasks agree on: each one name, spelled once."""

import ast
import os
import re

from estimator_dist.contract import env_vars

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(env_vars.__file__)))
NAMES = {name: value for name, value in vars(env_vars).items() if name.isupper()}


def test_each_variable_has_one_name_and_the_package_prefix():
  values = list(NAMES.values())
  assert len(values) >= 12 and len(set(values)) == len(values), NAMES
  assert [v for v in values if not v.startswith("ESTIMATOR_DIST_")] == []


def test_no_other_module_spells_a_variable_of_its_own():
  # A string that starts with the prefix anywhere else is a second name for a variable.
  found = []
  for directory, _, files in os.walk(PACKAGE):
    for name in files:
      path = os.path.join(directory, name)
      if name.endswith(".py") and path != os.path.abspath(env_vars.__file__):
        with open(path) as f:
          found += [f"{path}:{number}" for number, line in enumerate(f, 1)
                    if re.search(r"[\"']ESTIMATOR_DIST_", line)]
  assert found == []


def test_the_module_imports_nothing():
  # Every layer (and the launcher, which imports no TensorFlow) reads it.
  with open(env_vars.__file__) as f:
    tree = ast.parse(f.read())
  assert [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))] == []


def test_the_preload_library_reads_the_bind_address_by_its_name():
  with open(os.path.join(PACKAGE, "contract", "native", "bind_address.c")) as f:
    source = f.read()
  assert f'getenv("{env_vars.BIND_ADDRESS}")' in source
  assert f'getenv("{env_vars.BIND_INTERFACE}")' in source
