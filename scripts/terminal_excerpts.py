"""Writes the terminal excerpts of the docs from real runs: each ```text block that follows
`<!-- output of: COMMAND -->` in a page of PAGES becomes what COMMAND prints, run with
bash in a new directory holding the page's files (its `<!-- file: NAME -->` blocks; $REPO
is the checkout), the launcher's temporary paths masked (`estimator_dist_..._model_...`).

  python scripts/terminal_excerpts.py    # from the repository's root, after `make setup`

tests/docs_code_test.py checks that every line of an excerpt is still one the command
prints (numbers, ports and masked paths aside).
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = (os.path.join("docs", "quickstart.md"), os.path.join("docs", "troubleshooting.md"))
EXCERPT = re.compile(r"<!-- output of: (?P<command>.+?) -->\n```text\n(?P<text>.*?)^```\n",
                     re.DOTALL | re.MULTILINE)
_FILE = re.compile(r"<!-- file: (?P<name>\S+) -->\n```\w*\n(?P<code>.*?)^```\n",
                   re.DOTALL | re.MULTILINE)
# The launcher's own directories, named after its pid and start time (supervision/job_dirs).
_OWN_PATH = re.compile(r"estimator_dist_\d+-\d+_(\w+?)_\w+")


def masked(text, directory):
  """`text` with the run's directory, this Python's environment, the checkout and the
  launcher's temporary names masked."""
  text = text.replace(directory, "/tmp").replace(sys.prefix, "<venv>").replace(ROOT, "<checkout>")
  return _OWN_PATH.sub(r"estimator_dist_..._\1_...", text)


def run(command, files, timeout_secs=300):
  """What `command` prints (stdout and stderr, as a terminal shows them), masked."""
  with tempfile.TemporaryDirectory(prefix="excerpt_") as directory:
    for name, code in files.items():
      with open(os.path.join(directory, name), "w") as f:
        f.write(code)
    env = {**os.environ, "TMPDIR": directory, "REPO": ROOT,  # Its programs: tests/programs.
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    with subprocess.Popen(["bash", "-c", command], cwd=directory, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True) as done:
      try:
        output = done.communicate(timeout=timeout_secs)[0]
      except subprocess.TimeoutExpired:
        raise SystemExit(f"{command} still ran after {timeout_secs} s")
      finally:  # Every process the command started and left running.
        with contextlib.suppress(ProcessLookupError):
          os.killpg(done.pid, signal.SIGKILL)
    if done.returncode:
      raise SystemExit(f"{command} exited {done.returncode}:\n{output[-3000:]}")
    return masked(output, directory)


def main():
  for page in PAGES:
    path = os.path.join(ROOT, page)
    with open(path) as f:
      text = f.read()
    files = {m["name"]: m["code"] for m in _FILE.finditer(text)}

    def fresh(match):
      output = run(match["command"], files)
      return f"<!-- output of: {match['command']} -->\n```text\n{output}```\n"
    with open(path, "w") as f:
      f.write(EXCERPT.sub(fresh, text))
    print(f"wrote {page}")


if __name__ == "__main__":
  main()
