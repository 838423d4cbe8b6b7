"""A job of the launcher started as a child of this process, as a sweep starts a trial and
the bench a job it measures: `python -m estimator_dist.launch --strategy=S
--num_workers=N --model_dir=DIR [flags] -- PROGRAM ...`, its command line then its output
in `log`, pinned to `cpus`, and ended with this process (a parent-death signal; the
launcher ends its tasks as it dies)."""

import os
import subprocess
import sys

from estimator_dist.contract import process_identity


def start(*, strategy, num_workers, model_dir, program, log, env, flags=(), cpus=None,
          new_session=False):
  """Starts the job; its Popen. `flags`: more of the launcher's; `new_session`: in a
  session of its own (to be killed with it)."""
  command = [sys.executable, "-m", "estimator_dist.launch", f"--strategy={strategy}",
             f"--num_workers={num_workers}", f"--model_dir={model_dir}", *flags, "--",
             *program]
  log.write(f"{' '.join(command)}\n".encode())
  log.flush()

  def in_the_child():
    process_identity.die_with_parent()
    if cpus:
      os.sched_setaffinity(0, cpus)
  return subprocess.Popen(  # pylint: disable=subprocess-popen-preexec-fn
      command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
      preexec_fn=in_the_child, start_new_session=new_session)
