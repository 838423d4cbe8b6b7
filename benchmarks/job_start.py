"""Seconds from a job's command to its first training step, for checkouts side by side.

  python benchmarks/job_start.py --checkouts=/path/to/old,. --runs=5 \\
      --strategy=multi_worker --num_workers=2

Each run starts `python -m estimator_dist.launch` from a checkout (its code first on
PYTHONPATH) with tests.programs.plain_model and measures, by the launcher's output as
it comes, when the first line of a training step ("step = ") appears; the job is then
stopped. Runs alternate between the checkouts, so a noisy machine slows both alike.
Prints the minimum, median and maximum of each. With --resume, every run of a checkout
resumes in one model_dir, which a first job of it trained for 10 steps.
"""

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

_CHECKOUTS = flags.DEFINE_list("checkouts", ["."], "Repository checkouts to compare.")
_RUNS = flags.DEFINE_integer("runs", 5, "Jobs per checkout.", lower_bound=1)
_STRATEGY = flags.DEFINE_string("strategy", "multi_worker", "The jobs' strategy.")
_NUM_WORKERS = flags.DEFINE_integer("num_workers", 2, "The jobs' workers.", lower_bound=1)
_TIMEOUT = flags.DEFINE_integer("timeout_secs", 300, "Longest wait for a first step.")
_RESUME = flags.DEFINE_boolean("resume", False, "Each run resumes from a checkpoint.")


def _command(checkout, *, strategy, num_workers, train_steps, model_dir):
  env = {**os.environ, "PYTHONPATH": os.path.abspath(checkout), "PYTHONWARNINGS": "ignore"}
  model_dir_flag = [f"--model_dir={model_dir}"] if model_dir else []
  return env, [sys.executable, "-m", "estimator_dist.launch", f"--strategy={strategy}",
               f"--num_workers={num_workers}", *model_dir_flag, "--", sys.executable, "-m",
               "tests.programs.plain_model", f"--train_steps={train_steps}"]


def seconds_to_first_step(checkout, *, strategy, num_workers, timeout_secs, model_dir=None):
  """Seconds from starting the launcher in `checkout` to its first step line."""
  env, command = _command(checkout, strategy=strategy, num_workers=num_workers,
                          train_steps=10**9, model_dir=model_dir)
  start = time.monotonic()
  job = subprocess.Popen(command, cwd=checkout, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
  try:
    for line in job.stdout:
      if "step = " in line:
        return time.monotonic() - start
      if time.monotonic() - start > timeout_secs:
        break
    raise RuntimeError(f"{checkout}: no training step within {timeout_secs} s")
  finally:
    os.killpg(job.pid, signal.SIGINT)  # The launcher stops every task.
    job.wait(60)
    job.stdout.close()


def main(_):
  measured = {checkout: [] for checkout in _CHECKOUTS.value}
  job = dict(strategy=_STRATEGY.value, num_workers=_NUM_WORKERS.value)
  with tempfile.TemporaryDirectory() as directory:
    model_dirs = {}
    for i, checkout in enumerate(_CHECKOUTS.value):
      model_dirs[checkout] = os.path.join(directory, str(i)) if _RESUME.value else None
      if _RESUME.value:
        env, command = _command(checkout, train_steps=10, model_dir=model_dirs[checkout], **job)
        subprocess.run(command, cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.STDOUT)
    for _ in range(_RUNS.value):
      for checkout, times in measured.items():
        times.append(seconds_to_first_step(
            checkout, timeout_secs=_TIMEOUT.value, model_dir=model_dirs[checkout], **job))
  resumed = ", each resumed from a checkpoint" if _RESUME.value else ""
  print(f"seconds from the command to the first step, {_STRATEGY.value} on "
        f"{_NUM_WORKERS.value} worker(s){resumed}, {_RUNS.value} runs each:")
  for checkout, times in measured.items():
    print(f"  {checkout}: min {min(times):.2f}  median {statistics.median(times):.2f}  "
          f"max {max(times):.2f}")


if __name__ == "__main__":
  app.run(main)
