"""A sweep on SLURM: an sbatch job array whose tasks are runners sharing one study.

  estimator-dist sweep --engine=slurm --parallel=8 --storage=postgresql://... \\
      --sweep_dir=/shared/sweep --space=... -- python train.py > sweep.sbatch
  sbatch sweep.sbatch

The study is created before the script is printed, so no two array tasks create it at
once. Each array task runs `estimator-dist sweep --parallel=1` with the same options:
it takes trials from the study (a trial whose runner died first) until the sweep has its
trials, running each as a local job of the launcher on its node. SLURM sends a runner
USR1 `task_env.DEFAULT_PREEMPTION_GRACE_SECS` before its time limit: its trial saves at
one step, and the array task requeues itself; the requeued runner resumes the trial from
there.
"""

import dataclasses
import shlex
import sys

from estimator_dist import errors
from estimator_dist.contract import task_env
from estimator_dist.engines import slurm
from estimator_dist.jobs import spec
from estimator_dist.supervision import signal_forwarding

_NOT_FORWARDED = ("parallel",)


def options_as_flags(options):
  """The flags of `estimator-dist sweep` that give `options`."""
  flags = []
  for field in dataclasses.fields(options):
    value = getattr(options, field.name)
    if field.name in _NOT_FORWARDED or value is None:
      continue
    if isinstance(value, bool):
      flags.append(f"--{'' if value else 'no'}{field.name}")
    elif isinstance(value, tuple):
      flags.append(f"--{field.name}={','.join(value)}")
    else:
      flags.append(f"--{field.name}={value}")
  return flags


def sbatch_array(program, *, options, python=sys.executable):
  """The sbatch script of `options.parallel` runners of the sweep."""
  job = spec.JobSpec(strategy=options.strategy, num_workers=options.workers_per_trial,
                     command=tuple(program))
  grace = task_env.DEFAULT_PREEMPTION_GRACE_SECS
  runner = [python, "-m", "estimator_dist.cli", "sweep", *options_as_flags(options),
            "--parallel=1", "--", *program]
  lines = ["#!/bin/bash",
           "#SBATCH --job-name=estimator-dist-sweep",
           f"#SBATCH --array=0-{options.parallel - 1}",
           "#SBATCH --ntasks=1",
           f"#SBATCH --cpus-per-task={job.num_tasks}",
           f"#SBATCH --output={options.sweep_dir}/slurm-%A_%a.out",
           f"#SBATCH --signal=B:USR1@{task_env.whole_seconds(grace)}",
           "#SBATCH --requeue",
           "set -euo pipefail",
           *signal_forwarding.trap("USR1"),
           f"# Each array task is a runner: it takes trials from {options.storage_url}",
           f"# until the sweep has {options.trial_count} finished trials, each a local job of "
           f"{job.num_tasks} process(es).",
           *(["# SQLite on a shared file system is unsafe for runners on several nodes:",
              "# give --storage=postgresql://... (or journal:/shared/path) for those."]
             if not options.storage else []),
           "# USR1 (before the time limit): the trial saves, and the array task requeues.",
           *task_env.shell_exports(task_env.task_environment(preemption_grace_secs=grace)),
           *signal_forwarding.lines(shlex.join(runner), forward='kill -USR1 "$step_pid"'),
           f'if [ "$code" -eq {errors.PREEMPTED_EXIT_CODE} ]; then {slurm.requeue("sweep")}; fi',
           'exit "$code"']
  return "\n".join(lines) + "\n"
