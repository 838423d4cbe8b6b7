"""Loads pages of the built site in a headless Chromium, served as a browser gets them.

  python scripts/check_site.py site [quickstart/ reference/launch/ ...]

Serves the directory with `python -m http.server` on 127.0.0.1 and loads each page with
Debian's `chromium` (`--headless --dump-dom`). Fails, naming the page, on any message of
the page's console (a script error included), on a request the server answered with an
error (a missing stylesheet, script or image), or on a page whose title is not there.
`make docs` runs it after `mkdocs build` where chromium is installed.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile

PAGES = ("quickstart/", "reference/launch/", "reference/api/")
_CONSOLE = re.compile(r":INFO:CONSOLE[^\]]*\] (.*)")
_FAILED_REQUEST = re.compile(r'"(GET|HEAD) (\S+) [^"]*" ([45]\d\d) ')
_TITLE = re.compile(r"<h1[^>]*>(.+?)</h1>", re.DOTALL)


def serve(directory, log):
  """(server process, its URL): http.server on a free port of 127.0.0.1."""
  server = subprocess.Popen(
      [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
       "--directory", directory], stdout=subprocess.PIPE, stderr=log, text=True,
      start_new_session=True)
  first = server.stdout.readline()  # Serving HTTP on 127.0.0.1 port N (http://...) ...
  port = re.search(r"port (\d+)", first)
  if not port:
    server.kill()
    raise SystemExit(f"check_site: http.server did not start: {first!r}")
  return server, f"http://127.0.0.1:{port.group(1)}/"


def load(url, profile):
  """(page's DOM, console messages) of `url` in a headless Chromium."""
  browser = subprocess.run(
      ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
       f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
       "--virtual-time-budget=5000", "--dump-dom", url],
      capture_output=True, text=True, timeout=120, start_new_session=True, check=False)
  if browser.returncode != 0:
    raise SystemExit(f"check_site: chromium exited {browser.returncode} on {url}:\n"
                     f"{browser.stderr[-3000:]}")
  return browser.stdout, _CONSOLE.findall(browser.stderr)


def check(directory, pages=PAGES):
  """The problems found on `pages` of the site in `directory`, each a line."""
  problems = []
  with tempfile.TemporaryDirectory() as work:
    log_path = os.path.join(work, "server.log")
    with open(log_path, "w") as log:
      server, base = serve(directory, log)
      try:
        for page in pages:
          dom, console = load(base + page, os.path.join(work, "profile"))
          problems += [f"{page}: console: {message}" for message in console]
          if not _TITLE.search(dom):
            problems.append(f"{page}: no title in the page Chromium loaded")
      finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait()
    with open(log_path) as log:
      problems += [f"{path}: the server answered {code}"
                   for _, path, code in _FAILED_REQUEST.findall(log.read())]
  return problems


def main(argv):
  if len(argv) < 2:
    raise SystemExit(__doc__)
  pages = argv[2:] or PAGES
  problems = check(argv[1], pages)
  for problem in problems:
    print(f"check_site: {problem}", file=sys.stderr)
  if problems:
    return 1
  print(f"check_site: {len(pages)} pages loaded in Chromium ({', '.join(pages)}): no console "
        f"message, no failed request")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
