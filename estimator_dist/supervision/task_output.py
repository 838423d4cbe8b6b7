"""A task's output, copied line by line with the task's prefix, and the summary lines it
printed (which count where the job has no mailbox: contract/summary.py).

Nothing a program prints stops the copying: a task whose output is no longer read blocks
on its next write once the pipe is full, and the job with it.
"""

import collections
import contextlib
import re
import threading

from estimator_dist import command_line
from estimator_dist.contract import summary
from estimator_dist.supervision import shown_output

# horovodrun's line tags: "[1]<stdout>:" under Gloo, "[1,1]<stdout>:" under MPI.
_HOROVOD_LINE = re.compile(r"^\[(?:\d+,)?(\d+)\]<std(?:out|err)>:(.*)$")
_LINE_LIMIT = 1 << 20  # Bytes: a longer line is copied in pieces, never held whole.


class Output:
  """The output of the task `name`, copied to `out`; `tail` keeps its last lines, for an
  error message; `printed_summaries` the fields of the summary lines it printed.
  """

  def __init__(self, name, out, *, logs=None):
    """logs: a shown_output.TaskLogs, which keeps every line in a file and chooses what
    `out` shows (None: every line, kept nowhere else)."""
    self.tail = collections.deque(maxlen=20)
    self._name, self._out = name, out
    self._shown = {}  # prefix: its shown_output.Shown (horovodrun's ranks each have one).
    self._file = logs and logs.file_of(name)
    self._logs = logs if self._file else None  # Lines kept nowhere are all shown.
    self.printed_summaries, self._uncopied = [], False
    self._process = self._thread = None

  def copy(self, process):
    """Copies the output of `process` (a Popen with stdout a pipe) in a thread."""
    self._process = process
    self._thread = threading.Thread(target=self._copy, daemon=True)
    self._thread.start()

  def join(self, timeout):
    self._thread.join(timeout)

  def _warn(self, message):
    command_line.write(self._out, f"{self._name}: {message}", command="launch")

  def _copy(self):
    try:
      self._copy_lines()
    finally:
      if self._file:
        with contextlib.suppress(OSError):
          self._file.close()

  def _copy_lines(self):
    for raw in iter(lambda: self._process.stdout.readline(_LINE_LIMIT), b""):
      try:
        self._copy_line(raw)
      except Exception as e:  # pylint: disable=broad-except
        if not self._uncopied:
          self._uncopied = True
          with contextlib.suppress(Exception):  # The output itself may be what fails.
            self._warn(f"a line of its output was not copied ({type(e).__name__}: {e}); "
                       f"its output is still read, so the task goes on")

  def _copy_line(self, raw):
    line = raw.decode("utf-8", "replace").rstrip("\n")
    match = _HOROVOD_LINE.match(line)
    prefix = f"[worker:{match.group(1)}]" if match else f"[{self._name}]"
    text = match.group(2) if match else line
    self.tail.append(text)
    fields = summary.parse_line(text)
    if fields:
      self.printed_summaries.append(fields)
    if self._file:
      try:
        self._file.write(line + "\n")
        self._file.flush()
      except OSError as e:  # A full disk: the terminal shows every line from here on.
        file, self._file, self._logs = self._file, None, None
        with contextlib.suppress(OSError):
          file.close()
        self._warn(f"its output is no longer kept in {file.name} ({e}): every line of it "
                   f"is shown from here on")
    if self._logs and prefix not in self._shown:
      self._shown[prefix] = shown_output.Shown(self._logs.level, program=self._logs.program)
    shown = self._shown[prefix](text) if self._logs else text
    if shown is None:
      self._logs.count_hidden()
      return
    self._out.write(f"{prefix} {shown}\n")
    self._out.flush()
