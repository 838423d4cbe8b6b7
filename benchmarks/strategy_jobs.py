"""The strategy benchmark's jobs, run and measured as `estimator-dist bench` runs a user's
program (estimator_dist/bench): from their tasks' heartbeats, once every task is past the
warm-up, for a window, then stopped.

Three kinds, each a real job of the launcher on this machine:
  toolkit       a model_zoo model trained by estimator_dist (toolkit_program.py);
  hand-written  the same model in a program written without it (baselines/), run as it is
                (--instrument=off); its tasks beat through the toolkit's heartbeat hook;
  the limit     as many independent copies of the toolkit's program, side by side.
"""

import dataclasses
import os
import sys
from typing import Optional

from benchmarks import models
from estimator_dist.bench import measured_job
from estimator_dist.bench import program_bench
from estimator_dist.strategies import traits

LIMIT = program_bench.LIMIT
TOOLKIT, HAND_WRITTEN = "toolkit", "hand-written"
_HAND_WRITTEN_MODULES = {"horovod": "benchmarks.baselines.horovod_estimator"}
_DISTRIBUTE_MODULE = "benchmarks.baselines.distribute_estimator"
# As many steps as a measured job can want: it is stopped once measured.
_UNTIL_STOPPED = 1_000_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
  """What every job of one benchmark shares."""
  model: str
  data: str
  batch_size: int
  threads_per_worker: int
  output_dir: str
  window: measured_job.Window
  num_ps: int = 1


def _model_args(settings, strategy, workers):
  threads = settings.threads_per_worker
  if threads and traits.of(strategy).one_process:
    threads *= workers  # One process runs every replica.
  return [f"--model={settings.model}", f"--data={settings.data}",
          f"--batch_size={settings.batch_size}",
          f"--learning_rate={models.MODELS[settings.model].learning_rate}",
          *([f"--intra_op_threads={threads}"] if threads else [])]


def toolkit_program(settings, strategy="local", workers=1, *, train_steps=_UNTIL_STOPPED,
                    extra=()):
  """The command of model_zoo's model trained by the toolkit (`strategy`, `workers`: the
  job's, for its threads)."""
  return [sys.executable, "-m", "benchmarks.toolkit_program",
          *_model_args(settings, strategy, workers), f"--train_steps={train_steps}", *extra]


def hand_written_program(settings, strategy, workers):
  """The command of the hand-written program of `strategy`: it is given its strategy (the
  launcher gives a program run as it is no flag)."""
  module = _HAND_WRITTEN_MODULES.get(strategy, _DISTRIBUTE_MODULE)
  return [sys.executable, "-m", module, *_model_args(settings, strategy, workers),
          f"--strategy={strategy}", f"--train_steps={_UNTIL_STOPPED}",
          *([f"--num_devices={workers}"] if strategy == "mirrored" else [])]


def run(kind, strategy, workers, settings, *, label="", extra=(),
        train_steps_to_end: Optional[int] = None, checkpoint_every=0):
  """Runs and measures one job of `kind` (LIMIT: the copies; `strategy` is not read); its
  row (estimator_dist/bench/bench_report.row) with `job` (its kind, or for a toolkit job
  with `extra` flags its `label`) and `model_dir`. `train_steps_to_end`: a toolkit job
  trains so many steps and is measured from the warm-up to the end of its training,
  keeping its model_dir (and a checkpoint every `checkpoint_every` steps, if given)."""
  common = dict(window=settings.window, num_ps=settings.num_ps,
                output_dir=settings.output_dir)
  if kind == LIMIT:
    return {**program_bench.run_job(LIMIT, workers, program=toolkit_program(settings),
                                    **common), "job": LIMIT}
  if kind == HAND_WRITTEN:
    return {**program_bench.run_job(strategy, workers, label=HAND_WRITTEN, instrument=False,
                                    program=hand_written_program(settings, strategy, workers),
                                    **common), "job": HAND_WRITTEN}
  if train_steps_to_end:
    extra = (*extra, *([f"--save_checkpoints_steps={checkpoint_every}",
                        "--keep_checkpoint_max=0"] if checkpoint_every else []))
    common["window"] = dataclasses.replace(settings.window, to_the_end=True)
  program = toolkit_program(settings, strategy, workers, extra=extra,
                            train_steps=train_steps_to_end or _UNTIL_STOPPED)
  found = program_bench.run_job(strategy, workers, program=program, label=label,
                                keep_model_dir=bool(train_steps_to_end), **common)
  return {**found, "job": label or TOOLKIT, "model_dir": os.path.join(
      program_bench.job_directory(settings.output_dir, strategy, workers, label), "model")}
