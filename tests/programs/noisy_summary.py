"""A program whose output looks like the job's summary, then trains plain_model.

It prints `estimator-dist: summary: none yet` (words without `=`), a well-formed summary
line of its own making, and more lines than a pipe holds (--flood_lines), as a program
that logs its own "summary" would: none of it may stop the launcher copying its output,
nor stand for the job's summary. --bad_record=KIND leaves, where the launcher said the
chief's summary record goes (in the job's mailbox), a JSON record cut short (json), a FIFO
(fifo), a file larger than any record (large), bytes that are no text (binary) or nothing
at all (none), and ends at once without training.
"""

import os

from absl import flags

import estimator_dist as ed
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import summary
from tests.programs import plain_model

flags.DEFINE_integer("flood_lines", 2000, "Lines of 100 characters to print first.")
flags.DEFINE_enum("bad_record", None, ["json", "fifo", "large", "binary", "none"],
                  "Leave this instead of a summary record; do not train.")
FLAGS = flags.FLAGS

FORGED = f"{summary.PREFIX} strategy=forged workers=99 steps=7"


def main(argv):
  print(f"{summary.PREFIX} none yet", flush=True)
  print(FORGED, flush=True)
  for number in range(FLAGS.flood_lines):
    print(f"flood {number:06d} " + "x" * 87, flush=True)
  if FLAGS.bad_record:
    path = mailbox_lib.Mailbox.of_environment().path(mailbox_lib.SUMMARY, mailbox_lib.CHIEF)
    if FLAGS.bad_record == "fifo":
      os.mkfifo(path)
    elif FLAGS.bad_record != "none":
      with open(path, "wb") as f:
        f.write({"json": b'{"steps": [1, 2], "workers"', "binary": b'{"steps": "\xff\xfe"}',
                 "large": os.urandom(2 << 20)}[FLAGS.bad_record])
    return
  plain_model.main(argv)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, learning_rate=0.01, train_steps=20)
  ed.run_program(main)
