"""The line of a failed job's log that says why it failed: a sweep's one-line message, a
tracked run's failure.

A job's log interleaves its tasks' lines (`[chief:0] ...`, `[worker:0] ...`, the
launcher's `estimator-dist launch: ...`), most of them TensorFlow's and absl's INFO lines;
the last line says only that the job ended. The cause, in this order:
  1. the exception line that ends the first Python traceback (the last of its chained
     exceptions: the one the program died of);
  2. else the first line, not a log record, that names an error (`... error: ...`, as
     our programs print a configuration error; `Fatal Python error: ...`; `XError: ...`);
  3. else the first ERROR or FATAL log record (absl `E1124 ...`, TensorFlow's C++
     `... E tensorflow/...]`, `ERROR:...`): after those, since TensorFlow logs harmless
     ones (a CUDA plugin registered twice) whenever it is imported;
  4. else the last line that is not a log record.
Never an INFO, WARNING or DEBUG record.
"""

import re
from typing import Optional

from estimator_dist import command_line

MAX_CHARS = 400  # The message stays one readable line; the log has the rest.
# Where a line comes from: the launcher's tag of a task's lines ([chief:0], [worker:1]),
# or the prefix of our own (estimator-dist launch: ).
_SOURCE = re.compile(r"^(\[[\w:.-]+\] ?|" + re.escape(command_line.PROGRAM) +
                     r"(?: \w+)?: )?(.*)$")
# absl's records, Python's (I1124 00:19:34.355854 1405 file.py:42]) and C++'s
# (E0000 00:00:1732404000.123456   1405 file.cc:477]).
_ABSL = re.compile(r"^([DIWEF])\d{4} [\d:.]+ +\d+ \S+:\d+\]")
_CPP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([DIWEF]) \S+\]")
_PYTHON_LOG = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL|FATAL):")
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct")
_NAMES_AN_ERROR = re.compile(r"\berror\b|\w(Error|Exception)\b|\bfatal\b", re.IGNORECASE)


def first_error_line(log_text) -> Optional[str]:
  """The line of `log_text` that says why its job failed (see the module); None for a log
  without any line but log records."""
  lines = [_SOURCE.match(line.rstrip()).groups("") for line in log_text.splitlines()]
  found = _traceback_exception(lines)
  if found is None:
    named = [(s, b) for s, b in lines if _level(b) is None and _NAMES_AN_ERROR.search(b)]
    records = [(s, b) for s, b in lines if _level(b) in ("E", "F", "C")]
    plain = [(s, b) for s, b in lines if _level(b) is None and b.strip()]
    found = (named[:1] or records[:1] or plain[-1:] or [None])[0]
  if found is None:
    return None
  line = "".join(found).strip()
  return line if len(line) <= MAX_CHARS else line[:MAX_CHARS] + " ..."


def _level(body):
  """D, I, W, E, F or C of a log record; None for a line that is not one."""
  for pattern in (_ABSL, _CPP, _PYTHON_LOG):
    match = pattern.match(body)
    if match:
      return match.group(1)[0]
  return None


def _traceback_exception(lines):
  """(source, line) of the exception that ends the first traceback; None if none does.

  A traceback's lines are those of one source (another task's lines come between);
  frames are indented, the exception line is not, and a chained exception's
  traceback follows its "During handling ..." line."""
  start = next((i for i, (_, body) in enumerate(lines) if body.startswith(_TRACEBACK)),
               None)
  if start is None:
    return None
  source, found, chained = lines[start][0], None, True
  for own, body in lines[start + 1:]:
    if own != source or not body.strip() or body[0].isspace():
      continue
    if body.startswith(_TRACEBACK) or body.startswith(_CHAINED):
      chained = True
    elif chained:  # The first unindented line after a traceback's frames.
      found, chained = (own, body), False
    else:
      break  # The traceback and its chain ended.
  return found
