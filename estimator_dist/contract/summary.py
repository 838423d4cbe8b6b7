"""The job's training summary: a line the chief prints, and a record the launcher reads.

The line (`estimator-dist: summary: strategy=... steps=...`) is for people, and for the
engines that start no launcher of ours (SLURM's script, Spark, Kubernetes, horovodrun on
other hosts), whose output is all there is. The local launcher instead names a file in the
job's private directory (env_vars.SUMMARY_FILE); the chief writes its summary there as a
JSON object (`write_record`) and the launcher reads it once the task ended
(`read_record`): a line of a program's output can neither forge the summary nor break it.
"""

import os

from estimator_dist.contract import env_vars
from estimator_dist.contract import whole_file

# The library writes it, in the chief: it starts as our lines in a task do
# (command_line.line, which the contract cannot import; command_line_test holds them equal).
PREFIX = "estimator-dist: summary:"


def format_line(fields):
  return PREFIX + " " + " ".join(f"{k}={v}" for k, v in fields.items())


def parse_line(line):
  """The fields of a summary line, or None if `line` is not one (a word without `=` makes
  it none: a program may print the prefix for its own reasons)."""
  start = line.find(PREFIX)
  if start < 0:
    return None
  words = line[start + len(PREFIX):].split()
  if not words or not all("=" in word for word in words):
    return None
  return dict(word.split("=", 1) for word in words)


def format_table(fields):
  return "\n".join(f"  {k:14s} {v}" for k, v in fields.items())


def write_record(fields, *, warn, env=os.environ):
  """Writes `fields` where the launcher asked (env_vars.SUMMARY_FILE; nowhere without
  it), whole or not at all (a rename): the launcher never reads half a record. `warn`
  gets one line when it cannot: the printed line still has the numbers."""
  path = env.get(env_vars.SUMMARY_FILE)
  if not path:
    return
  try:
    whole_file.write_json(path, fields)
  except OSError as e:
    warn(f"the summary record {path} was not written ({e}): the launcher shows no summary "
         f"table; the summary line below has the same numbers")


def read_record(path, *, warn):
  """The fields the chief wrote at `path`; None when it wrote none. A record that is not a
  JSON object of names and plain values (whatever a program left there: a FIFO, a large
  or binary file) is ignored, and `warn` gets one line saying so."""
  try:
    fields = whole_file.read_json(path)
  except FileNotFoundError:
    return None
  except whole_file.Unreadable as e:
    fields = e
  except OSError as e:
    warn(f"the summary record {path} could not be read ({e}); the job has no summary")
    return None
  if isinstance(fields, dict) and all(
      isinstance(value, (str, int, float)) for value in fields.values()):
    return fields
  warn(f"the summary record {path} is not a JSON object of names and values "
       f"({str(fields)[:200]}); ignored, the job has no summary (only the chief writes "
       f"that file: a program must leave ${env_vars.SUMMARY_FILE} alone)")
  return None
