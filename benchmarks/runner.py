"""Starts one benchmarked job on this machine and collects its step times.

Three kinds of job, all on real processes started by estimator_dist's launcher:
  toolkit      the model trained by estimator_dist (benchmarks/toolkit_program.py);
  baseline     the same model in a hand-written program (benchmarks/baselines/), run
               as it is (--instrument=off);
  independent  N unconnected single-process trainings, side by side: the ceiling of
               data parallelism on this machine.
"""

import dataclasses
import os
import shutil
import sys
import time

from benchmarks import models
from benchmarks import timing
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import launcher as launcher_lib
from estimator_dist.jobs import spec
from estimator_dist.supervision import processes
from estimator_dist.task import placement

BASELINES = {"horovod": "benchmarks.baselines.horovod_estimator"}
DISTRIBUTE_BASELINE = "benchmarks.baselines.distribute_estimator"
# Hand-written parameter servers never exit; the launcher stops them this long after
# training has ended.
_PS_GRACE_SECS = 5


@dataclasses.dataclass
class Job:
  kind: str              # toolkit, baseline or independent
  strategy: str          # the strategy ("local" for independent)
  num_workers: int
  variant: str = ""      # a name for extra toolkit options, e.g. "fp16"
  extra_args: tuple = ()
  steps: int = 0         # its training steps; 0: the settings'.

  @property
  def name(self):
    variant = f"-{self.variant}" if self.variant else ""
    return f"{self.kind}-{self.strategy}{variant}-{self.num_workers}"


@dataclasses.dataclass
class Settings:
  model: str
  data: str
  batch_size: int
  steps: int
  threads_per_worker: int
  output_dir: str
  checkpoint_every: int = 0  # > 0: keep a checkpoint every so many steps


def _program_args(job, settings, timing_dir):
  threads = settings.threads_per_worker
  if job.strategy == "mirrored":
    threads *= job.num_workers  # One process runs every replica.
  steps = job.steps or settings.steps
  args = [f"--model={settings.model}", f"--data={settings.data}",
          f"--learning_rate={models.MODELS[settings.model].learning_rate}",
          f"--batch_size={settings.batch_size}", f"--train_steps={steps}",
          f"--timing_dir={timing_dir}"]
  if threads:
    args.append(f"--intra_op_threads={threads}")
  if job.kind == "baseline":  # Run as it is: the launcher gives it no flag.
    args.append(f"--strategy={job.strategy}")
    if job.strategy == "mirrored":
      args.append(f"--num_devices={job.num_workers}")
  if job.kind == "toolkit" and settings.checkpoint_every:
    args += [f"--save_checkpoints_steps={settings.checkpoint_every}", "--keep_checkpoint_max=0"]
  return args + list(job.extra_args)


def run(job, settings):
  """Runs `job`; returns {"job", "code", "seconds", "timings", "model_dir", "log", "start"}."""
  directory = os.path.join(settings.output_dir, "runs", job.name)
  shutil.rmtree(directory, ignore_errors=True)
  model_dir, timing_dir = os.path.join(directory, "model"), os.path.join(directory, "timing")
  os.makedirs(timing_dir)
  module = ("benchmarks.toolkit_program" if job.kind != "baseline"
            else BASELINES.get(job.strategy, DISTRIBUTE_BASELINE))
  command = [sys.executable, "-m", module, *_program_args(job, settings, timing_dir)]
  log_path = os.path.join(directory, "log.txt")
  start = time.time()
  with open(log_path, "w") as log:
    if job.kind == "independent":
      code = _independent(command, model_dir, job.num_workers, log)
    else:
      baseline = job.kind == "baseline"
      job_spec = spec.JobSpec(strategy=job.strategy, num_workers=job.num_workers,
                              command=[*command, f"--model_dir={model_dir}"])
      code = launcher_lib.launch(job_spec, options=launch_options.LaunchOptions(
          shutdown_timeout_secs=_PS_GRACE_SECS if baseline else 120,
          instrument="off" if baseline else "auto"), out=log)
  timings = timing.read_dir(timing_dir)
  if job.kind == "baseline" and len(timings) == (
      1 if job_spec.traits.one_process else job.num_workers):
    # A hand-written program, run as it is, joins no strategy of the toolkit's, so the
    # launcher fails its job even when it trained (and stops its ps tasks, which never
    # exit): it ran when each training process wrote its step times.
    code = 0
  return {"job": job, "code": code, "seconds": time.time() - start, "timings": timings,
          "model_dir": model_dir, "log": log_path, "start": start}


def _independent(command, model_dir, num_workers, log):
  """`num_workers` copies of a one-process training, started together, unconnected."""
  group = processes.TaskGroup(out=log)
  names = [f"local:{i}" for i in range(num_workers)]
  try:
    for i, name in enumerate(names):
      # Each gets its own share of the CPUs, as the toolkit gives its workers.
      cpus = placement.share(os.sched_getaffinity(0), i, num_workers)
      pin = ["taskset", "-c", ",".join(map(str, cpus))] if cpus else []
      group.start(name, [*pin, *command, "--strategy=local",
                         f"--model_dir={os.path.join(model_dir, str(i))}"],
                  processes.child_env())
    return group.wait(set(names), shutdown_timeout_secs=60)
  finally:
    group.stop_all()
