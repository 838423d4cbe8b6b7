"""What an engine that runs no launcher of ours says once its job's step ended, from the
job's mailbox (contract/mailbox.py): a job whose tasks all exited 0 but did not all join
the job's strategy (they trained alone, if at all) fails, naming them. The sbatch script
of `estimator-dist slurm` runs it after a step that succeeded:

  python -m estimator_dist.jobs.job_end --mailbox=DIR --strategy=S --tasks=chief:0,worker:0
"""

import argparse
import sys

from estimator_dist import command_line
from estimator_dist.contract import joined
from estimator_dist.contract import mailbox as mailbox_lib


def main(argv=None, *, command="slurm"):
  parser = argparse.ArgumentParser(prog="python -m estimator_dist.jobs.job_end")
  parser.add_argument("--mailbox", required=True)
  parser.add_argument("--strategy", required=True)
  parser.add_argument("--tasks", required=True, help="The names that must join, by commas.")
  args = parser.parse_args(argv)
  missing = joined.not_joined(mailbox_lib.Mailbox(args.mailbox), args.tasks.split(","),
                              strategy=args.strategy)
  if missing:
    command_line.write_error(joined.failure(missing, strategy=args.strategy), command)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
