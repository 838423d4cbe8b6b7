"""The code a newcomer copies from README.md and the Quickstart runs, as the pages show it.

Each ```python, ```bash and ```sh block is extracted: one that follows `<!-- file: NAME -->`
is written to NAME, one that follows `<!-- not run -->` is left alone, and every other is a
shell script run in the directory of those files, with `--train_steps=N` lowered to 20
(docs/development.md, "The code a newcomer copies runs").
"""

import os
import re

import pytest

from tests import helpers

PAGES = ("README.md", os.path.join("docs", "quickstart.md"))
RUN_STEPS = 20
_BLOCK = re.compile(
    r"(?:<!--\s*(?P<note>[^>]*?)\s*-->\s*\n)?```(?P<language>\w*)\n(?P<code>.*?)^```",
    re.DOTALL | re.MULTILINE)
_LANGUAGES = ("python", "bash", "sh")


def blocks(page):
  """[(language, note, code)] of the code blocks of `page` (a path under the repository)."""
  with open(os.path.join(helpers.REPO, page)) as text:
    return [(m["language"], m["note"] or "", m["code"]) for m in _BLOCK.finditer(text.read())]


def runnable(pages=PAGES):
  """({file name: text}, [shell scripts]) of `pages`, each script once; a file two pages
  give must be the same in both."""
  files, scripts = {}, []
  for page in pages:
    for language, note, code in blocks(page):
      if language not in _LANGUAGES or note == "not run":
        continue
      if note.startswith("file:"):
        name = note[len("file:"):].strip()
        assert files.setdefault(name, code) == code, f"{page}'s {name} differs from another page's"
      else:
        assert not note, f"{page}: a code block after <!-- {note} -->, which the test does not know"
        script = re.sub(r"--train_steps=\d+", f"--train_steps={RUN_STEPS}", code)
        if script not in scripts:
          scripts.append(script)
  return files, scripts


def test_every_block_of_the_pages_is_run_or_marked_not_run():
  for page in PAGES:
    kinds = [language for language, _, _ in blocks(page)]
    assert kinds, f"no code block found in {page}"
    assert all(k in _LANGUAGES + ("text",) for k in kinds), (
        f"{page} has a code block of another language ({kinds}): use python, bash or sh for "
        f"code and text for output")
  files, scripts = runnable()
  assert "quickstart.py" in files and scripts


def test_the_readmes_program_is_the_quickstarts():
  readme = [code for _, note, code in blocks("README.md") if note.startswith("file:")]
  quickstart = [code for _, note, code in blocks(PAGES[1]) if note.startswith("file:")]
  assert readme and readme == quickstart


EXCERPTS = helpers.script_module("terminal_excerpts")


def excerpts():
  """{the command as the test runs it: [each line of its excerpt in the pages]}."""
  found = {}
  for page in EXCERPTS.PAGES:
    with open(os.path.join(helpers.REPO, page)) as f:
      for match in EXCERPTS.EXCERPT.finditer(f.read()):
        command = re.sub(r"--train_steps=\d+", f"--train_steps={RUN_STEPS}", match["command"])
        found[command] = match["text"].splitlines()
  return found


def _shape(line):
  """A line of output as a pattern: its numbers any numbers, a masked name any text, the
  task that prints it any task (the first of two to say the same)."""
  pattern = re.escape(line).replace(re.escape("..."), ".*")
  pattern = re.sub(r"\d+(?:\\\.\d+)?", r"\\d+(?:\\.\\d+)?", pattern)
  return re.compile(re.sub(r"^\\\[\w+:", r"\\[\\w+:", pattern))


def test_the_pages_excerpts_are_written_by_the_script():
  assert excerpts(), "no <!-- output of: ... --> excerpt in " + ", ".join(EXCERPTS.PAGES)
  assert EXCERPTS.masked("model_dir=/tmp/x1/estimator_dist_12-34_model_ab_cd/logs",
                         "/tmp/x1") == "model_dir=/tmp/estimator_dist_..._model_.../logs"
  assert _shape("steps/sec=463.07 at 127.0.0.1:561 in /tmp/estimator_dist_..._model_...")\
      .fullmatch("steps/sec=9.5 at 127.0.0.1:4 in /tmp/estimator_dist_1-2_model_x")
  assert _shape("[chief:0] error: 2 workers").fullmatch("[worker:1] error: 3 workers")
  assert not _shape("[chief:0] error: 2 workers").fullmatch("[worker:1] error: 3 tasks")


def troubleshooting():
  """The excerpts of the troubleshooting page, each named by its section's title."""
  with open(os.path.join(helpers.REPO, "docs", "troubleshooting.md")) as f:
    text = f.read()
  return [pytest.param(match, id=re.findall(r"^## (.+)$", text[:match.start()], re.M)[-1])
          for match in EXCERPTS.EXCERPT.finditer(text)]


def test_the_troubleshooting_page_shows_what_real_runs_printed():
  # TensorFlow missing, a refusal, a peer that never came, a hang, another model's
  # checkpoint, a program's own exit code, tasks that trained alone, an empty input, a
  # worker's extra round...
  assert len(troubleshooting()) >= 10


@pytest.mark.processes
@pytest.mark.parametrize("match", troubleshooting())
def test_the_troubleshooting_lines_are_what_their_commands_print(match):
  """Each error line of the troubleshooting page that a real run wrote (its `<!-- output
  of: ... -->`) is still what the command prints."""
  printed = EXCERPTS.run(match["command"], {}).splitlines()
  for line in match["text"].splitlines():
    assert any(_shape(line).fullmatch(p) for p in printed), (
        f"the page shows {line!r}, which {match['command']} no longer prints (run `python "
        f"scripts/terminal_excerpts.py`):\n" + "\n".join(printed))


@pytest.mark.processes
def test_the_pages_code_runs(tmp_path):
  files, scripts = runnable()
  for name, code in files.items():
    (tmp_path / name).write_text(code)
  bin_dir = os.path.dirname(helpers.PYTHON)
  env = helpers.child_env(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
                          TMPDIR=str(tmp_path))
  for script in scripts:
    code, output = helpers.run(["bash", "-euo", "pipefail", "-c", script], timeout=240,
                               env=env, cwd=str(tmp_path))
    assert code == 0, f"{script}\nexited {code}:\n{output[-5000:]}"
    if "estimator-dist launch" in script:
      assert "estimator-dist launch: summary" in output, output[-3000:]
      assert f"steps          {RUN_STEPS}" in output, output[-3000:]
      # The default terminal: the toolkit's lines of each task, none of TensorFlow's
      # INFO lines or deprecation warnings, which are all in the tasks' logs.
      tasks = [line for line in output.splitlines() if line.startswith("[")]
      assert any(line.startswith("[chief:0] estimator-dist: ") for line in tasks), output
      noise = [line for line in tasks if re.match(r"\[\S+\] ([IW]\d{4} |\d{4}-\d\d-\d\d )",
                                                  line) or "deprecat" in line]
      assert not noise, output
      logs = re.search(r"left out \d+ of the tasks' lines .*: every line is in (\S+)\n",
                       output)
      assert logs, output[-3000:]
      with open(os.path.join(logs[1], "chief-0.log")) as f:
        assert "is deprecated" in f.read()
    # Every line the pages show of the command's output is one it still prints (written
    # by scripts/terminal_excerpts.py from a real run; a progress line comes every 30 s).
    printed = EXCERPTS.masked(output, str(tmp_path)).splitlines()
    for line in excerpts().get(script.strip(), []):
      if "progress:" not in line:
        assert any(_shape(line).fullmatch(p) for p in printed), (
            f"the pages show {line!r}, which {script.strip()} no longer prints (run `python "
            f"scripts/terminal_excerpts.py`):\n" + "\n".join(printed))
