"""The job's training summary: a line the chief prints, and a record the launcher reads.

The line (`estimator-dist: summary: strategy=... steps=...`) is for people, and for the
engines that start no launcher of ours (SLURM's script, Spark, Kubernetes, horovodrun on
other hosts), whose output is all there is. The local launcher instead reads the record
the chief posts in the job's mailbox, a JSON object (`write_record`), once the job ended
(`read_record`): a line of a program's output can neither forge the summary nor break it.
SLURM's script (`engines.job_end`) and Spark's driver read it too, to say when a job that
succeeded has none, or one that is not the chief's.
"""

from estimator_dist.contract import mailbox as mailbox_lib
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


def write_record(fields, *, warn):
  """Posts `fields` in the job's mailbox (nowhere without one). `warn` gets one line when
  it cannot: the printed line still has the numbers."""
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox is None:
    return
  try:
    mailbox.post(mailbox_lib.SUMMARY, mailbox_lib.CHIEF, fields)
  except OSError as e:
    warn(f"the summary record in {mailbox.directory} was not written ({e}): the launcher "
         f"shows no summary table; the summary line below has the same numbers")


MISSING = ("no summary: the chief wrote no summary record (a program that trains without "
           "estimator_dist's train_and_evaluate, or that removed it, writes none)")


def read_record(mailbox, *, warn, expected=False):
  """The fields the chief posted in `mailbox`; None when it posted none (`warn` gets
  MISSING if it was `expected`: the job succeeded). A record that is not a JSON object of
  names and plain values (whatever a program left there: a FIFO, a large or binary file)
  is ignored, and `warn` gets one line saying so. Every engine reads it so: the job's own
  exit code stands."""
  try:
    fields = mailbox.read(mailbox_lib.SUMMARY, mailbox_lib.CHIEF)
  except whole_file.Unreadable as e:
    fields = e
  except OSError as e:
    warn(f"the summary record in {mailbox.directory} could not be read ({e}); the job "
         f"has no summary")
    return None
  if fields is None:
    if expected:
      warn(MISSING)
    return None
  if isinstance(fields, dict) and all(
      isinstance(value, (str, int, float)) for value in fields.values()):
    return fields
  warn(f"the summary record in {mailbox.directory} is not a JSON object of names and "
       f"values ({str(fields)[:200]}); ignored, the job has no summary (only the chief "
       f"writes it: a program must leave the job's mailbox alone)")
  return None
