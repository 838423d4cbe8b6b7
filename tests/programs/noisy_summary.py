"""A program whose output looks like the job's summary, then trains plain_model.

It prints `estimator-dist: summary: none yet` (words without `=`), a well-formed summary
line of its own making, and more lines than a pipe holds (--flood_lines), as a program
that logs its own "summary" would: none of it may stop the launcher copying its output,
nor stand for the job's summary. --bad_record writes a malformed record where the
launcher said the chief's summary record goes (env_vars.SUMMARY_FILE) and ends at once.
"""

import os

from absl import flags

import estimator_dist as ed
from estimator_dist.contract import env_vars
from estimator_dist.contract import summary
from tests.programs import plain_model

flags.DEFINE_integer("flood_lines", 2000, "Lines of 100 characters to print first.")
flags.DEFINE_bool("bad_record", False, "Write a malformed summary record; do not train.")
FLAGS = flags.FLAGS

FORGED = f"{summary.PREFIX} strategy=forged workers=99 steps=7"


def main(argv):
  print(f"{summary.PREFIX} none yet", flush=True)
  print(FORGED, flush=True)
  for number in range(FLAGS.flood_lines):
    print(f"flood {number:06d} " + "x" * 87, flush=True)
  if FLAGS.bad_record:
    with open(os.environ[env_vars.SUMMARY_FILE], "w") as f:
      f.write('{"steps": [1, 2], "workers"')
    return
  plain_model.main(argv)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, learning_rate=0.01, train_steps=20)
  ed.run_program(main)
