"""The copies of upstream programs (tests/programs/upstream/), each alone and through
`estimator-dist launch` under every strategy, as written: a table of exit code, seconds,
training steps and the evaluation each job printed.

  python -m benchmarks.upstream_programs [--programs=premade_estimator,...]
      [--strategies=local,multi_worker,horovod,mirrored,parameter_server] [--num_workers=2]

Run from the repository's root. A program that names its own model_dir (the multi-worker
tutorial's /tmp/multiworker) has it removed before and after each run.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

from estimator_dist.contract import summary
from estimator_dist.supervision import failure_cause

PROGRAMS = ("premade_estimator", "keras_model_to_estimator", "multi_worker_with_estimator",
            "tensorflow_mnist_estimator", "census_estimator", "official_mnist")
_OWN_MODEL_DIRS = {"multi_worker_with_estimator": "/tmp/multiworker",
                   "census_estimator": "/tmp/census-estimator",
                   "official_mnist": "/tmp/mnist_model"}
# What each program prints of its evaluation, when it prints one.
_PRINTED = re.compile(r"(Test set accuracy: [0-9.]+|Eval result: .*|\{'accuracy': .*\})")

flags.DEFINE_list("programs", list(PROGRAMS), "Programs of tests/programs/upstream/.")
flags.DEFINE_list("strategies", ["alone", "local", "multi_worker", "horovod", "mirrored",
                                 "parameter_server"],
                  "'alone' runs the program without the launcher.")
flags.DEFINE_integer("num_workers", 2, "Workers of each launched job (local: 1).")
flags.DEFINE_integer("timeout_secs", 900, "A run that takes longer is stopped.")


def command(program, strategy, num_workers):
  module = f"tests.programs.upstream.{program}"
  if strategy == "alone":
    return [sys.executable, "-m", module]
  extra = ["--num_ps=1"] if strategy == "parameter_server" else []
  workers = 1 if strategy == "local" else num_workers
  return [sys.executable, "-m", "estimator_dist.launch", "--nocurves",
          f"--strategy={strategy}", f"--num_workers={workers}", *extra, "--",
          sys.executable, "-m", module]


def run(program, strategy, num_workers, timeout_secs):
  """(exit code, seconds, summary fields, printed evaluation, the error line if any)."""
  own = _OWN_MODEL_DIRS.get(program)
  scratch = tempfile.mkdtemp(prefix="upstream_")  # Relative paths a program writes.
  if own:
    shutil.rmtree(own, ignore_errors=True)
  env = {**os.environ, "PYTHONPATH": os.getcwd()}
  started = time.monotonic()
  try:
    done = subprocess.run(command(program, strategy, num_workers), cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=timeout_secs)
    code, output = done.returncode, done.stdout + done.stderr
  except subprocess.TimeoutExpired as e:
    code, output = "timeout", str(e.stdout or "") + str(e.stderr or "")
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
    if own:
      shutil.rmtree(own, ignore_errors=True)
  seconds = time.monotonic() - started
  # The last summary: a program of several rounds has one for each evaluate().
  fields = ([f for f in map(summary.parse_line, output.splitlines()) if f] or [{}])[-1]
  printed = _PRINTED.findall(output)
  error = "" if code == 0 else (failure_cause.first_error_line(output) or "")
  return code, seconds, fields, printed[-1] if printed else "", error


def main(_):
  f = flags.FLAGS
  print("| program | strategy | exit | seconds | steps | eval (summary) | printed | error |")
  print("| --- | --- | --- | --- | --- | --- | --- | --- |")
  for program in f.programs:
    for strategy in f.strategies:
      code, seconds, fields, printed, error = run(program, strategy, f.num_workers,
                                                 f.timeout_secs)
      evaluation = ", ".join(f"{k}={v}" for k, v in fields.items() if k.startswith("eval_"))
      print(f"| {program} | {strategy} | {code} | {seconds:.0f} | {fields.get('steps', '')} "
            f"| {evaluation} | {printed[:60]} | {error[-160:]} |", flush=True)


if __name__ == "__main__":
  app.run(main)
