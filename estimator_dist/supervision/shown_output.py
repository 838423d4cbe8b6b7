"""What the launcher's terminal shows of its tasks' output (--terminal), and where all of
it is kept.

  default  every line of a task but TensorFlow's own chatter: its start-up notes (oneDNN,
           CPU features, CUDA libraries not found), its INFO lines (a RunConfig dump,
           `Calling model_fn`, `Graph was finalized`, ...) and its deprecation warnings.
           The program's prints, its own log lines (its main file's), every warning and
           error, and tracebacks show; the toolkit's own lines show as
           `estimator-dist: ...`, without absl's time and thread prefix.
  quiet    the toolkit's lines, warnings, errors and tracebacks: no INFO line, no print.
  all      every line as the task wrote it.

Whatever the terminal shows, the launcher keeps every line of each task in a file of the
model_dir (`estimator_dist/logs/<task>.log`) and names it at the end when lines were not
shown. A line is told by its form alone (absl's `I1129 12:00:09.18 140 file.py:58] ...`,
TensorFlow's C++ `2026-11-29 12:00:07.14: I path.cc:113] ...`, Python's `file.py:10:
UserWarning: ...`); a record's continuation lines go with it where its form is known (a
RunConfig's braces, a deprecation's instructions).
"""

import os
import re
import threading
import time

from estimator_dist import command_line

LEVELS = ("quiet", "default", "all")
# The line a task's log gets each time the task starts (a restart appends to it).
STARTED = command_line.line("started", "launch")
OURS = command_line.PROGRAM  # How the toolkit's lines start.
_ABSL = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ ([^\s:\]]+):\d+\] ?(.*)$")
_CPP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWEF]) \S+\] ?(.*)$")
_PY_WARNING = re.compile(r"^\S.*:\d+: \w*Warning: (.*)$")
# TensorFlow's lines hidden at any level: its start-up notes (what a CPU-only machine
# lacks, or could use), and what it says of the way the toolkit runs it, which a program
# cannot act on: the probe whether an input shards by file (task/inputs.py) failing on an
# input that reads no files, the evaluation run without a strategy, save_checkpoints_secs
# replaced under a collective strategy, the options of a Dataset in a graph, the
# generator of a numpy input. Its deprecation warnings go too: the records of its
# deprecation module, and Python's warnings that say "deprecated".
_NOISE = re.compile(
    r"oneDNN custom operations|This TensorFlow binary is optimized|Could not find cuda|"
    r"Unable to register cu(DNN|FFT|BLAS) factory|TF-TRT Warning|Could not find TensorRT|"
    r"Cannot dlopen some GPU|Found an unshardable source dataset|`eval_strategy` is not "
    r"passed in|Collective ops may deadlock with `save_checkpoints_secs`|To make it "
    r"possible to preserve tf.data options|GeneratorDatasetOp::Dataset will not be "
    r"optimized")
_START_UP_NOTE = "To enable the following instructions"  # The CPU features' second line.
# A line of a protocol buffer's text, as TensorFlow prints one in a record. A record's
# body goes on with indented and empty lines, and with such lines after a record that
# ends in a field of one (`... with config: device_filters: "/job:chief/task:0"`): a
# program's `accuracy: 0.98` after another record is the program's.
_PROTO = re.compile(r'^\s*([a-z_][a-z0-9_]*( \{|: ("[^"]*"|-?[0-9.e+-]+|true|false|'
                    r'[A-Z][A-Z0-9_]*))|\}|)$')
_PROTO_TAIL = re.compile(r'(^|\s)[a-z_][a-z0-9_]*: ("[^"]*"|-?[0-9.e+-]+|true|false|'
                         r'[A-Z][A-Z0-9_]*)$|\{$')


class Shown:
  """The lines of one task's output the terminal shows at `level`; `program`: the
  basename of the program's main file, whose own INFO lines show by default."""

  def __init__(self, level, *, program=None):
    self._level, self._program = level, program
    self._hide_while = None  # What a continuation line of a hidden record looks like.
    self._braces = 0
    self._traceback = False

  def __call__(self, line):
    """The text to show for `line`; None to hide it."""
    if self._level == "all":
      return line
    record = _ABSL.match(line) or _CPP.match(line)
    if not record and self._continues(line):
      return None
    self._hide_while = None
    if record:
      self._traceback = False
      return self._record(line, record)
    warning = _PY_WARNING.match(line)
    if warning and (_NOISE.search(warning.group(1)) or "deprecat" in warning.group(1)):
      self._hide_while = "indented"  # The line of the source that warned.
      return None
    if warning:
      return line
    self._traceback = (self._traceback and line[:1].isspace()) or line.startswith(
        ("Traceback (most recent call last)", "During handling of the above",
         "The above exception was"))
    if line.startswith(_START_UP_NOTE):
      return None
    if (self._level == "quiet" and not self._traceback and not _is_error_line(line)
        and not line.startswith(OURS)):
      return None
    return line

  def _continues(self, line):
    kind, self._hide_while = self._hide_while, None
    if kind == "braces":
      self._braces += line.count("{") - line.count("}")
      self._hide_while = "braces" if self._braces > 0 else None
      return True
    if kind == "instructions" and line.startswith("Instructions for updating"):
      self._hide_while = "one more"
      return True
    if kind == "indented" and line[:1].isspace():
      return True
    if kind in ("body", "proto") and (line[:1].isspace() or not line or (
        kind == "proto" and _PROTO.match(line))):
      self._hide_while = kind
      return True
    return kind == "one more"

  def _record(self, line, record):
    level, message = record.group(1), record.group(record.lastindex)
    if message.startswith(OURS):
      return message
    source = record.group(2) if record.re is _ABSL else None
    deprecation = source == "deprecation.py"
    if not _NOISE.search(message) and not deprecation and (
        level != "I" or (source == self._program and self._level == "default")):
      return line
    self._braces = message.count("{") - message.count("}")
    self._hide_while = ("braces" if self._braces > 0 else
                        "instructions" if deprecation else
                        "proto" if _PROTO_TAIL.search(message) else "body")
    return None


def _is_error_line(line):
  """An exception's last line (`ValueError: ...`), as a traceback ends."""
  return bool(re.match(r"^[\w.]*(Error|Exception|Exit|Interrupt)\b", line))


class TaskLogs:
  """Every line of each task of a job, kept in `directory`, and what the terminal shows of
  them (`level`; `program`: the basename of the program's main file); counts the lines it
  did not show. Without a directory (a model_dir of another file system) nothing is kept,
  and the terminal shows every line."""

  def __init__(self, directory, *, level, program=None):
    self.directory, self.level, self.program = directory, level if directory else "all", program
    self.hidden = 0
    self._lock = threading.Lock()

  def file_of(self, task_name):
    """The file, open to append, that keeps every line of `task_name`; None without a
    directory (or where it cannot be written)."""
    if not self.directory:
      return None
    try:
      os.makedirs(self.directory, exist_ok=True)
      log = open(os.path.join(self.directory, task_name.replace(":", "-") + ".log"), "a",
                 encoding="utf-8", errors="replace")
      log.write(f"{STARTED} {task_name} at {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
      return log
    except OSError:
      return None

  def count_hidden(self):
    with self._lock:
      self.hidden += 1

  def note(self):
    """The line that says where the lines the terminal did not show are; None when it
    showed every line."""
    if not self.hidden:
      return None
    return (f"the terminal left out {self.hidden} of the tasks' lines (TensorFlow's start-up "
            f"notes, INFO lines and deprecation warnings; --terminal=all shows them): every "
            f"line is in {self.directory}")
