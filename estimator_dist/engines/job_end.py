"""What an engine that runs no launcher of ours reads in the job's mailbox
(contract/mailbox.py) once its step ended, as the local launcher does:

- exit code 0: every task must have joined the job's strategy; a job whose tasks trained
  alone (if at all) fails (1), naming them; a summary record that is missing, or not the
  chief's, is one line (`contract.summary`), and the code stands;
- exit code 200: a preemption only when the toolkit said so (a task's verdict, the
  chief's save); a program's own 200 is named as the program's, and not requeued (1);
- another code: 124 when the job's watcher ended the step because a task hung (its
  verdict), else the code stands.

The sbatch script of `estimator-dist slurm` runs it after its step:

  python -m estimator_dist.engines.job_end --mailbox=DIR --strategy=S --tasks=chief:0,... --code=N
"""

import argparse
import sys

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import joined
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import summary


def main(argv=None, *, command="slurm"):
  parser = argparse.ArgumentParser(prog="python -m estimator_dist.engines.job_end")
  parser.add_argument("--mailbox", required=True)
  parser.add_argument("--strategy", required=True)
  parser.add_argument("--tasks", required=True, help="The names that must join, by commas.")
  parser.add_argument("--code", type=int, required=True, help="The step's exit code.")
  args = parser.parse_args(argv)
  mailbox = mailbox_lib.Mailbox(args.mailbox)
  if args.code == errors.PREEMPTED_EXIT_CODE:
    if mailbox_lib.preempted(mailbox):
      return 0
    command_line.write(sys.stdout, f"exit code {args.code} is the program's own (no task "
                       f"said the toolkit chose it): the job is not requeued", command)
    return 1
  if args.code != 0:
    hung = errors.STALLED_EXIT_CODE in mailbox_lib.verdict_codes(mailbox)
    return errors.STALLED_EXIT_CODE if hung else 0
  if not mailbox.names(mailbox_lib.REACHED):
    command_line.write(sys.stdout, f"no task reached the job's mailbox {args.mailbox}: the "
                       f"nodes do not share it (give --model_dir a directory every node "
                       f"reaches); whether every task joined the job's strategy is not "
                       f"checked", command)
    return 0
  summary.read_record(mailbox, expected=True,  # One line, and the job's code stands.
                      warn=lambda line: command_line.write(sys.stdout, line, command))
  if args.strategy == "local":  # One process on its own is the job.
    return 0
  missing = joined.not_joined(mailbox, args.tasks.split(","), strategy=args.strategy)
  if missing:
    command_line.write_error(joined.failure(missing, strategy=args.strategy), command)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
