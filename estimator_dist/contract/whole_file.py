"""A JSON file written whole: a record one process writes and another reads (the chief's
summary, a task's joined record, an instrumented program's rounds, a heartbeat's progress,
a PBT exploit's marker) is never read half written. It goes to a file of the writer's own
and is renamed into place, readable by all as a file the writer opened would be (a Spark
driver reads what its executors, maybe another user, write)."""

import json
import os
import tempfile

SUFFIX = ".partial"  # Of a file being written: a reader that lists a directory skips it.


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
