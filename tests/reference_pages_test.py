"""docs/reference/ is what scripts/reference_pages.py writes from the code: every command's
flags, the program flags, the environment variables, the exit codes, the public names."""

import importlib.util
import os

from absl import flags

from estimator_dist import errors
from tests import helpers

FIX = "run `python scripts/reference_pages.py` and commit the pages it writes"


REFERENCE = helpers.script_module("reference_pages")


def test_every_committed_page_is_what_the_script_writes():
  for path, text in REFERENCE.pages().items():
    full = os.path.join(helpers.REPO, path)
    assert os.path.exists(full), f"{path} is missing: {FIX}"
    with open(full) as page:
      assert page.read() == text, (
          f"{path} is not what the code it lists defines (a flag, variable, exit code or "
          f"public name was added, changed or removed): {FIX}")


def test_no_page_of_the_script_is_left_from_an_older_list():
  written = {os.path.basename(path) for path in REFERENCE.pages()}
  directory = os.path.join(helpers.REPO, REFERENCE.REFERENCE)
  for name in sorted(os.listdir(directory)):
    with open(os.path.join(directory, name)) as page:
      if REFERENCE.MARK in page.read():
        assert name in written, f"{REFERENCE.REFERENCE}/{name} lists nothing any more: remove it"


def listed(page, name):
  return f"--{name}`" in page or f"--[no]{name}`" in page


def test_every_command_has_a_page_with_each_of_its_flags():
  """Each flag on its command's page; verify's program flags on theirs, linked from it."""
  pages = REFERENCE.pages()
  program = pages[os.path.join(REFERENCE.REFERENCE, REFERENCE.PROGRAM_FLAGS)]
  for command, (module, _) in REFERENCE.commands().items():
    page = pages[os.path.join(REFERENCE.REFERENCE, f"{command}.md")]
    values = flags.FlagValues()
    importlib.import_module(module).define_flags(values)
    for name in values:
      if not values[name].help.startswith("Internal:"):
        assert listed(page, name) or (
            REFERENCE.PROGRAM_FLAGS in page and listed(program, name)), (command, name)


def test_every_exit_code_errors_defines_has_its_row():
  rows = {code for code, _, _ in errors.EXIT_CODES}
  defined = {name: value for name, value in vars(errors).items() if name.endswith("_EXIT_CODE")}
  assert len(defined) >= 5
  for name, value in defined.items():
    assert str(value) in rows, f"errors.{name} ({value}) has no row in errors.EXIT_CODES"


def test_every_environment_variable_has_its_row():
  from estimator_dist.contract import env_vars  # pylint: disable=g-import-not-at-top
  listed = dict(REFERENCE.environment_variables())
  names = {v for k, v in vars(env_vars).items() if k.isupper()}
  assert set(listed) == names
  assert all(listed.values()), [name for name, text in listed.items() if not text]


def test_a_flag_added_without_its_page_fails_naming_the_page(monkeypatch):
  from estimator_dist.watching import progress_watch  # pylint: disable=g-import-not-at-top
  define = progress_watch.define_flags

  def define_one_more(flag_values):
    define(flag_values)
    flags.DEFINE_bool("one_more", False, "A flag without its page.", flag_values=flag_values)
  monkeypatch.setattr(progress_watch, "define_flags", define_one_more)
  page = os.path.join(REFERENCE.REFERENCE, "progress.md")
  with open(os.path.join(helpers.REPO, page)) as committed:
    assert REFERENCE.pages()[page] != committed.read()
  try:
    test_every_committed_page_is_what_the_script_writes()
  except AssertionError as e:
    assert "progress.md" in str(e) and "scripts/reference_pages.py" in str(e)
  else:
    raise AssertionError("a new flag went unnoticed")
