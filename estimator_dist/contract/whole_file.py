"""A JSON file written whole: a record one process writes and another reads (the chief's
summary, a task's joined record, an instrumented program's rounds) is never read half
written. It goes to a file of the writer's own and is renamed into place."""

import json
import os


def write_json(path, value):
  """Writes `value` as JSON at `path`, whole or not at all."""
  partial = f"{path}.{os.getpid()}.partial"
  with open(partial, "w") as f:
    json.dump(value, f)
  os.replace(partial, path)
