"""A JSON file written whole, and read warily: a record one process writes and another
reads (the chief's summary, a task's joined record, the chief's model_dir, an
instrumented program's rounds, a heartbeat's progress, a PBT exploit's marker).

It is never read half written: it goes to a file of the writer's own and is renamed into
place, readable by all as a file the writer opened would be (a Spark driver reads what
its executors, maybe another user, write). A program can put anything at a record's path
(it sees the variables that name them): it is read only if it is a regular file, without
blocking (a FIFO there would wait for ever), at most READ_LIMIT bytes, and its text and
JSON checked; anything else is `Unreadable`, with why.
"""

import json
import os
import stat
import tempfile

SUFFIX = ".partial"  # Of a file being written: a reader that lists a directory skips it.
READ_LIMIT = 1 << 20  # Bytes: every record is a few hundred.


class Unreadable(ValueError):
  """A record's path holds what is not a record: not a regular file, too large, not
  UTF-8 text or not JSON."""


def read_json(path):
  """The value of the JSON record at `path`. FileNotFoundError where there is none;
  Unreadable (saying why) where something else is there; OSError where it cannot be read."""
  fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
  with os.fdopen(fd, "rb") as f:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
      raise Unreadable("it is not a regular file")
    data = f.read(READ_LIMIT + 1)
  if len(data) > READ_LIMIT:
    raise Unreadable(f"it is larger than {READ_LIMIT} bytes")
  try:
    return json.loads(data.decode("utf-8"))
  except UnicodeDecodeError as e:
    raise Unreadable(f"it is not UTF-8 text ({e.reason} at byte {e.start})") from None
  except ValueError as e:
    raise Unreadable(f"it is not JSON ({e})") from None


def write_json(path, value):
  """Writes `value` as JSON at `path`, whole or not at all."""
  # A file of its own, by name: pids repeat across the jobs' PID namespaces.
  with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path) or os.curdir,
                                   prefix=os.path.basename(path) + ".", suffix=SUFFIX,
                                   delete=False) as f:
    try:
      os.fchmod(f.fileno(), 0o644)  # NamedTemporaryFile makes it private (0600).
      json.dump(value, f)
      f.close()
      os.replace(f.name, path)
    except BaseException:
      os.remove(f.name)  # A full disk leaves no part behind.
      raise
