"""Preemption under every strategy: SIGTERM to every process of the job at a random moment
of training (or to the ps alone), one agreed step, the chief's checkpoint there, exit code
200, and a rerun that trains the steps left once and ends at the last."""

import contextlib
import glob
import json
import os
import random
import re
import signal
import subprocess
import time

import psutil
import pytest

from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.supervision import process_tree
from estimator_dist.supervision import signal_forwarding
from estimator_dist.task import preemption
from tests import helpers

STEPS = 600  # Checkpoints every 1000 steps: the only ones are those of steps 0 and 600.
_STEPS_RUN = re.compile(r"^\[(\w+:\d)\] steps_run=(\d+)$", re.M)


def checkpoint_steps(model_dir):
  return sorted(int(m.group(1)) for name in glob.glob(os.path.join(model_dir, "*.index"))
                if (m := re.search(r"model\.ckpt-(\d+)\.index$", name)))


def progress_step(job):
  """The step of the launcher's latest progress line (0 before the first)."""
  steps = [int(m.group(1)) for _, line in job.lines
           if (m := re.search(r"^estimator-dist launch: progress: step (\d+)/", line))]
  return steps[-1] if steps else 0


def test_a_signal_is_a_request_once_and_the_handlers_before_come_back():
  before = signal.getsignal(signal.SIGTERM)
  with preemption.watched():
    assert process_tree.catches(os.getpid(), signal.SIGUSR1)
    assert preemption.requested() is None
    os.kill(os.getpid(), signal.SIGUSR1)
    os.kill(os.getpid(), signal.SIGTERM)  # A repeat: still the first one's request.
    assert preemption.requested() == "SIGUSR1"
  assert signal.getsignal(signal.SIGTERM) is before and preemption.requested() is None
  assert not process_tree.catches(os.getpid(), signal.SIGUSR1)


@pytest.mark.processes
def test_the_shell_passes_the_signal_on_until_the_step_catches_it_and_keeps_its_code():
  """The lines of the sbatch script, with `kill` for scancel: the step ignores USR1 for
  its first second (a task still starting), then exits 200 at the first it catches."""
  step = ("bash -c 'trap \"\" USR1; sleep 1; trap \"exit 200\" USR1; "
          "while :; do sleep 0.1; done'")
  script = "\n".join([*signal_forwarding.trap("USR1"),
                       *signal_forwarding.lines(step, forward='kill -USR1 "$step_pid"',
                                                every_secs=0.3), 'echo "code=$code"'])
  shell = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True)
  time.sleep(0.3)
  shell.send_signal(signal.SIGUSR1)  # While the step still ignores it.
  output, _ = shell.communicate(timeout=20)
  assert output.strip() == "code=200"
  # A step that ends by itself keeps its code, with no signal.
  script = "\n".join([*signal_forwarding.trap("USR1"),
                       *signal_forwarding.lines("bash -c 'exit 3'", forward="true"),
                       'echo "code=$code"'])
  assert subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                        timeout=20).stdout.strip() == "code=3"


@pytest.mark.processes
@pytest.mark.parametrize("saved", [False, True])
def test_a_task_stuck_past_its_grace_ends_itself_and_shows_where_it_was(saved):
  """Killed; or, once the chief saved (TensorFlow's session close has hung after the save
  under load), with the code of a preemption: its job resumes from the checkpoint."""
  program = ("import time\nfrom estimator_dist.task import preemption\npreemption.watch()\n"
             "def stuck_in_its_end():\n  while True: time.sleep(0.1)\n"
             f"print('watching', flush=True)\n{'preemption.work_saved()' if saved else ''}\n"
             "stuck_in_its_end()\n")
  task = subprocess.Popen([helpers.PYTHON, "-c", program], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=helpers.REPO,
                          env={**helpers.child_env(), env_vars.PREEMPTION_GRACE_SECS: "1"})
  assert task.stdout.readline() == "watching\n"
  task.send_signal(signal.SIGUSR1)
  _, printed = task.communicate(timeout=30)
  assert task.returncode == (errors.PREEMPTED_EXIT_CODE if saved else -signal.SIGKILL), printed
  how = "exits with code 200 (its work was saved)" if saved else "is killed"
  assert f"SIGUSR1 came 6s ago and this task has not ended: it ends at once and {how}; its " \
         "threads were here:" in printed, printed
  assert 'in stuck_in_its_end' in printed, printed


def signal_every_process(job, signum=signal.SIGTERM):
  """`signum` to the launcher and every process under it, as systemctl stop, pkill or a
  container runtime send it."""
  launcher = psutil.Process(job.process.pid)
  for process in [launcher, *launcher.children(recursive=True)]:
    with contextlib.suppress(psutil.NoSuchProcess):
      process.send_signal(signum)


def task_process(job, role, program="tests.programs.plain_model"):
  """The program's process of the task `role` (its TF_CONFIG's task type)."""
  for process in psutil.Process(job.process.pid).children(recursive=True):
    with contextlib.suppress(psutil.Error):
      config = json.loads(process.environ().get("TF_CONFIG") or "{}")
      if config.get("task", {}).get("type") == role and process.cmdline()[1:3] == ["-m", program]:
        return process
  raise AssertionError(f"no {role} task under the launcher:\n{job.output[-3000:]}")


def wait_for_step(job, step, timeout=240):
  deadline = time.monotonic() + timeout
  while progress_step(job) < step and job.process.poll() is None:
    assert time.monotonic() < deadline, job.output[-3000:]
    time.sleep(0.05)


# Horovod with a fixed global batch of micro-batches of 8: the ranks accumulate different
# numbers of micro-batches (session runs) per update, 2+1 (uneven) and 1+1 (under Gloo).
_SPLITS = {24: (2, 1), 16: (1, 1)}


@pytest.mark.processes
@pytest.mark.parametrize("strategy,launch_args,global_batch", [
    ("mirrored", [], None),
    ("multi_worker", [], None),
    ("parameter_server", ["--num_ps=1", "--evaluator"], None),
    ("horovod", [], 24),
    ("horovod", ["--horovod_controller=gloo"], 16),
])
def test_sigterm_to_every_process_saves_at_one_agreed_step_and_the_rerun_trains_the_rest_once(
    strategy, launch_args, global_batch, tmp_path):
  model_dir = str(tmp_path / "run")
  launch = [f"--strategy={strategy}", "--num_workers=2", "--progress_secs=0.2", *launch_args]
  runs_per_step = dict(enumerate(_SPLITS.get(global_batch, (1, 1))))
  # A step lasts 10 ms at least, so the signal comes well before the last step.
  program = [f"--model_dir={model_dir}", f"--train_steps={STEPS}",
             "--save_checkpoints_steps=1000", f"--step_secs={0.01 / runs_per_step[0]:g}"]
  if global_batch:
    program += ["--batch_size=8", f"--global_batch_size={global_batch}"]
  job = helpers.Job(*launch, program_args=program)
  try:
    wait_for_step(job, 300)
    time.sleep(random.uniform(0, 0.3))
    signal_every_process(job)
    code = job.wait(120)
  finally:
    job.kill()
  output = job.output
  assert code == errors.PREEMPTED_EXIT_CODE, output[-5000:]
  saved = re.search(r"\[(?:chief|worker):0] estimator-dist: preempted at global step (\d+): "
                    r"saved \S*model\.ckpt-(\d+); run the same command again", output)
  assert saved, output[-5000:]
  agreed, step = int(saved.group(1)), int(saved.group(2))
  assert checkpoint_steps(model_dir) == [0, step], output[-5000:]
  assert 300 <= step < STEPS, output[-5000:]
  before = {task: int(n) for task, n in _STEPS_RUN.findall(output)}
  if strategy == "parameter_server":
    # Asynchronous workers: each stops at its next look at the request, a step or a few
    # past the chief's; the chief saves the global step its saver reads as it ends.
    assert agreed <= step < agreed + 40, output[-5000:]
    assert re.search(r"\[evaluator:0\] .*preemption requested", output), output[-5000:]
    assert "estimator-dist launch: job was preempted with exit code 200" in output
  else:  # Every task ran the same updates, to the agreed one, which the chief saved.
    assert agreed == step, output[-5000:]
    # No rank was ended after it saved (horovodrun under Gloo and MPI ends every rank once
    # one exits with a code other than 0: the chief, the last, alone says 200).
    assert not re.search(r"Process \d+ exit with status code 1[34]\d|exited on signal",
                         output), output[-5000:]
    assert before == {task: step * runs_per_step[int(task[-1])] for task in before}, before
    assert len(before) == 2 - (strategy == "mirrored"), before

  code, again = helpers.run(helpers.launch_command(
      *launch, program=(helpers.PYTHON, "-m", "tests.programs.plain_model", *program)))
  assert code == 0, again[-5000:]
  assert f"Restoring parameters from {model_dir}/model.ckpt-{step}\n" in helpers.task_logs(
      model_dir), again[-5000:]
  summary, = helpers.summaries(again)
  assert int(summary["steps"]) >= STEPS and checkpoint_steps(model_dir)[-1] >= STEPS
  after = {task: int(n) for task, n in _STEPS_RUN.findall(again)}
  if strategy != "parameter_server":  # The steps between were trained once, by each task.
    assert after == {task: (STEPS - step) * runs_per_step[int(task[-1])] for task in before}, after
    assert checkpoint_steps(model_dir) == [0, step, STEPS]
  print(f"{strategy} {global_batch or ''}: preempted at {agreed}, saved {step}; rerun ran "
        f"{after} to {summary['steps']}")


@pytest.mark.processes
def test_sigterm_to_the_ps_alone_preempts_the_job_and_a_long_evaluation_is_abandoned(tmp_path):
  """The ps asks the training tasks to stop through their agreement; the chief, in an
  evaluation of 60 s beside its training, leaves it and saves within the grace."""
  model_dir = str(tmp_path / "run")
  job = helpers.Job("--strategy=parameter_server", "--num_workers=2", "--num_ps=1",
                    "--progress_secs=0.2", "--preemption_grace_secs=20",
                    program_args=[f"--model_dir={model_dir}", "--train_steps=100000",
                                  "--save_checkpoints_steps=50", "--step_secs=0.01",
                                  "--eval_secs=60", "--eval_throttle_secs=1"])
  try:
    deadline = time.monotonic() + 240
    while "Starting evaluation" not in helpers.task_logs(model_dir):
      assert time.monotonic() < deadline and job.process.poll() is None, job.output[-3000:]
      time.sleep(0.1)
    time.sleep(2)  # Into the evaluation's batches.
    signalled = time.monotonic()
    task_process(job, "ps").send_signal(signal.SIGTERM)
    code = job.wait(120)
  finally:
    job.kill()
  output = job.output
  assert code == errors.PREEMPTED_EXIT_CODE, output[-5000:]
  ended = job.first("estimator-dist launch: job was preempted with exit code 200")[0]
  assert ended and ended - signalled < 20, output[-5000:]  # Within the grace, not at 60 s.
  assert "[ps:0] " in output and "asked the training tasks to stop" in output, output[-5000:]
  assert re.search(r"\[chief:0\] .*an evaluation was abandoned after \d+ batches", output), (
      output[-5000:])
  saved = re.search(r"\[chief:0] estimator-dist: preempted at global step \d+: saved "
                    r"\S*model\.ckpt-(\d+)", output)
  assert saved and int(saved.group(1)) in checkpoint_steps(model_dir), output[-5000:]
  assert "did not save and stop" not in output, output[-5000:]
