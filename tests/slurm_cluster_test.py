"""SLURM for real: what `estimator-dist slurm` prints, submitted with sbatch to a one-node
cluster the test starts (tests/slurm_cluster.py), for every strategy; scancel, a task that
dies, and a job preempted at its time limit that requeues itself."""

import contextlib
import glob
import os
import re
import signal
import subprocess
import time

import psutil
import pytest

from estimator_dist.engines import slurm
from tests import helpers
from tests import slurm_cluster

# One cluster for the file: its tests run in one process of the suite (xdist).
pytestmark = [pytest.mark.processes, pytest.mark.xdist_group("slurm_cluster")]
PROGRAM = [helpers.PYTHON, "-m", "tests.programs.plain_model"]


@pytest.fixture(scope="module")
def cluster():
  with slurm_cluster.running() as running:
    yield running


def script(cluster, monkeypatch, strategy, *args, model_dir, steps, program_args=()):
  """What `estimator-dist slurm` prints for the job, sinfo reading the test's cluster."""
  monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
  base = helpers.consecutive_free_ports(8)
  return slurm.script_from_args([
      f"--strategy={strategy}", "--num_workers=2", f"--port_base={base}", *args, "--",
      *PROGRAM, f"--model_dir={model_dir}", f"--train_steps={steps}", *program_args])


def processes_of(model_dir):
  """The job's processes still running: those whose command line names its model_dir."""
  found = []
  for p in psutil.process_iter():
    try:
      if (p.status() != psutil.STATUS_ZOMBIE and
          any(model_dir in part for part in p.cmdline())):
        found.append(p)
    except psutil.Error:
      pass
  return found


def wait_for_checkpoint(model_dir, step, cluster, job_id, timeout=300):
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    found = [int(m.group(1)) for name in glob.glob(os.path.join(model_dir, "*.index"))
             if (m := re.search(r"model\.ckpt-(\d+)\.index$", name))]
    if found and max(found) >= step:
      return max(found)
    state = cluster.job(job_id)["JobState"]
    assert state in ("PENDING", "RUNNING", "CONFIGURING"), state
    time.sleep(0.2)
  pytest.fail(f"no checkpoint {step} in {model_dir} after {timeout}s")


class ListeningSockets(helpers.Sampler):
  """The addresses every task of a job (its command line names `model_dir`) listens on
  while it runs: `seen`. Not SLURM's own: srun's, and slurmstepd's that its tasks inherit
  (the pmix plugin's)."""

  def __init__(self, model_dir):
    super().__init__()
    self.model_dir, self.found, self.slurms = model_dir, set(), set()

  def sample(self):
    for p in psutil.process_iter(["name"]):
      if p.info["name"] == "slurmstepd":
        self.slurms |= helpers.listening(p)
    for p in processes_of(self.model_dir):
      with contextlib.suppress(psutil.Error):
        if p.name() != "srun":
          self.found |= helpers.listening(p)

  @property
  def seen(self):
    return {ip for ip, _ in self.found - self.slurms}


@pytest.mark.parametrize("strategy,args,overcommit", [
    ("multi_worker", [], False),
    # chief, evaluator, ps and worker: four tasks on the node's two CPUs.
    ("parameter_server", ["--num_ps=1", "--evaluator"], True),
    ("horovod", [], False),
    ("mirrored", [], False),
])
def test_the_printed_script_runs_under_sbatch(cluster, monkeypatch, tmp_path, strategy, args,
                                              overcommit):
  model_dir, output = str(tmp_path / "run"), str(tmp_path / "job.out")
  timeline = tmp_path / "timeline.json"
  text = script(cluster, monkeypatch, strategy, *args, model_dir=model_dir, steps=300,
                program_args=[f"--hvd_timeline={timeline}"] if strategy == "horovod" else [])
  assert ("#SBATCH --overcommit" in text) == overcommit, text
  with ListeningSockets(model_dir) as sockets:
    job_id = cluster.sbatch(text, output=output)
    fields = cluster.wait(job_id, timeout=300)
  with open(output) as f:
    printed = f.read()
  assert (fields["JobState"], fields["ExitCode"]) == ("COMPLETED", "0:0"), printed[-5000:]
  found = helpers.summaries(printed)
  assert len(found) == 1, printed[-5000:]
  assert (found[0]["strategy"], found[0]["replicas"]) == (strategy, "2"), found
  assert float(found[0]["eval_accuracy"]) >= 0.85, found
  # The batch step's watcher of the tasks' heartbeats said where training ended (with
  # parameter_server's asynchronous workers, a step or two past it).
  ended = re.findall(r"estimator-dist progress: step (\d+)/300 \(100 %\)", printed)
  assert ended and 300 <= int(ended[-1]) <= 305, printed[-5000:]
  assert not processes_of(model_dir)
  # Every server of the job on the node's address ('localhost'): TensorFlow's; MPI's
  # (without the binding, Horovod's ranks listened on 0.0.0.0 and [::]).
  assert sockets.seen <= {"127.0.0.1", "::ffff:127.0.0.1", "::1"}, sockets.seen
  if strategy != "horovod":  # MPI's listeners may come and go between two looks.
    assert bool(sockets.seen) == (strategy != "mirrored"), sockets.seen
  else:  # Rank 0's timeline of the job, a Chrome trace: the all-reduces are in it.
    events = helpers.chrome_trace(timeline)
    assert any("ALLREDUCE" in e.get("name", "") for e in events), events[:20]


@pytest.mark.parametrize("program, code", [
    ("tests.programs.upstream.premade_estimator", "0:0"),
    ("tests.programs.ignores_cluster", "1:0")])
def test_an_unmodified_program_trains_distributed_under_sbatch(cluster, monkeypatch, tmp_path,
                                                               program, code):
  """TensorFlow's premade-Estimator tutorial, which never imports estimator_dist, through
  `estimator-dist slurm --model_dir=DIR` under multi_worker: its tasks instrument it as
  the local launcher's do (once only `launch` did) and agree on its train and evaluate
  rounds through the job's mailbox in the model_dir. A program that ignores the cluster
  (every task trains alone) fails the job, naming the tasks that never joined."""
  model_dir, output = tmp_path / "run", str(tmp_path / "job.out")
  monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
  text = slurm.script_from_args([  # A task idle after training ends the job in 60 s.
      "--strategy=multi_worker", "--num_workers=2", "--hang_timeout_secs=60",
      f"--port_base={helpers.consecutive_free_ports(8)}", f"--model_dir={model_dir}",
      *(["--instrument=off"] if "ignores" in program else []), "--",
      helpers.PYTHON, "-m", program, *(["--model_dir", str(model_dir)]
                                       if "ignores" in program else [])])
  job_id = cluster.sbatch(text, output=output)
  fields = cluster.wait(job_id, timeout=300)
  with open(output) as f:
    printed = f.read()
  assert fields["ExitCode"] == code, printed[-5000:]
  if code != "0:0":
    assert ("estimator-dist slurm: error: every task exited 0, but the job did not train "
            "together under multi_worker: chief:0 never started the job's strategy; "
            "worker:0 never started the job's strategy.") in printed, printed[-5000:]
    return
  helpers.check_premade_trained_together(printed)
  assert not glob.glob(str(model_dir / "estimator_dist" / "mailbox-*"))  # Gone with the job.


def test_a_summary_record_the_program_spoiled_is_one_line_and_the_code_stands(
    cluster, monkeypatch, tmp_path):
  """What a program leaves where the chief's summary record goes (JSON cut short here) is
  read warily by the script's end of the job, as the local launcher reads it."""
  output = str(tmp_path / "job.out")
  monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
  text = slurm.script_from_args([
      "--strategy=local", "--num_workers=1", f"--model_dir={tmp_path / 'run'}", "--",
      helpers.PYTHON, "-m", "tests.programs.noisy_summary", "--bad_record=json",
      "--flood_lines=1"])
  fields = cluster.wait(cluster.sbatch(text, output=output), timeout=180)
  with open(output) as f:
    printed = f.read()
  assert fields["ExitCode"] == "0:0", printed[-5000:]
  warnings = [line for line in printed.splitlines() if "summary record" in line]
  assert len(warnings) == 1 and warnings[0].startswith(
      "estimator-dist slurm: the summary record in ") and (
          "Expecting ':' delimiter" in warnings[0]), (warnings, printed[-3000:])


def running_job(cluster, monkeypatch, tmp_path, *program_args, steps=100000, args=()):
  """A multi_worker job that trains until it is stopped, once it has a checkpoint."""
  model_dir, output = str(tmp_path / "run"), str(tmp_path / "job.out")
  text = script(cluster, monkeypatch, "multi_worker", *args, model_dir=model_dir, steps=steps,
                program_args=["--save_checkpoints_steps=100", *program_args])
  job_id = cluster.sbatch(text, output=output)
  wait_for_checkpoint(model_dir, 100, cluster, job_id)
  return job_id, model_dir, output


@pytest.fixture(autouse=True)
def no_job_left(cluster):
  """Cancels a job a failed test left running."""
  yield
  cluster.command("scancel", "--user=root", check=False)


def test_scancel_stops_every_task(cluster, monkeypatch, tmp_path):
  job_id, model_dir, _ = running_job(cluster, monkeypatch, tmp_path)
  assert len(processes_of(model_dir)) >= 2
  cluster.command("scancel", job_id)
  assert cluster.wait(job_id, timeout=60)["JobState"] == "CANCELLED"
  assert helpers.wait_until_gone(lambda: processes_of(model_dir), timeout=20) == []


def test_a_task_that_dies_ends_the_job(cluster, monkeypatch, tmp_path):
  job_id, model_dir, output = running_job(cluster, monkeypatch, tmp_path)
  worker = [p for p in processes_of(model_dir) if p.environ().get("SLURM_PROCID") == "1"]
  assert worker, [p.cmdline() for p in processes_of(model_dir)]
  worker[0].send_signal(signal.SIGKILL)
  fields = cluster.wait(job_id, timeout=60)
  assert fields["JobState"] == "FAILED", fields
  assert helpers.wait_until_gone(lambda: processes_of(model_dir), timeout=20) == []
  with open(output) as f:
    assert "task 1: Killed" in f.read()


def test_a_task_idle_after_its_training_ends_the_job_with_124(cluster, monkeypatch, tmp_path):
  """Tasks that, their training done, wait for ever (as a session that waits for a peer
  that exited does: with no CPU): the script's watcher reads their beats after training
  too (their watchdogs', from their CPU time) and kills the step after
  --hang_timeout_secs, exit 124, where once only the time limit ended such a job. A task
  stopped in training ends the job through the same watcher (spark_test's stopped task)."""
  model_dir, output = str(tmp_path / "run"), str(tmp_path / "job.out")
  job_id = cluster.sbatch(script(cluster, monkeypatch, "multi_worker", "--hang_timeout_secs=10",
                                 model_dir=model_dir, steps=50,
                                 program_args=["--idle_after_training"]), output=output)
  fields = cluster.wait(job_id, timeout=120)
  with open(output) as f:
    printed = f.read()
  assert (fields["JobState"], fields["ExitCode"]) == ("FAILED", "124:0"), printed[-3000:]
  assert printed.count("steps_run=") == 2, printed[-3000:]  # Both trained to the end.
  assert re.search(r"^estimator-dist progress: ((chief:0, )?worker:0|chief:0) ended its "
                   r"training and has made no progress since, for 10s \(it used no CPU: "
                   r".*; stopping the job$", printed, re.M), printed[-3000:]
  assert helpers.wait_until_gone(lambda: processes_of(model_dir), timeout=20) == []


def test_a_job_at_its_time_limit_saves_requeues_itself_and_resumes_there(
    cluster, monkeypatch, tmp_path):
  """A one-minute job that SLURM sends USR1 before its limit (--signal=B:USR1@30, up to
  30 s early): the task saves where it is, the script requeues the job, and the requeued
  job resumes at that step and completes. One process (mirrored): how the tasks of every
  strategy agree on the step is tests/preemption_test.py's."""
  steps = 1500  # At most 50 a second: the signal (within 30 s) comes before the last.
  model_dir, output = str(tmp_path / "run"), str(tmp_path / "job.out")
  text = script(cluster, monkeypatch, "mirrored", "--time=1", "--preemption_grace_secs=30",
                model_dir=model_dir, steps=steps,
                program_args=["--save_checkpoints_steps=100000", "--step_secs=0.02"])
  assert "#SBATCH --signal=B:USR1@30" in text and "#SBATCH --requeue" in text, text
  job_id = cluster.sbatch(text, output=output)
  deadline = time.monotonic() + 150
  while ((fields := cluster.job(job_id))["Restarts"], fields["JobState"]) != ("1", "PENDING"):
    assert fields["JobState"] in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"), (
        cluster.explain(job_id, fields, output))
    assert time.monotonic() < deadline, cluster.explain(job_id, fields, output)
    time.sleep(0.3)
  # SLURM holds a requeued job back for two minutes (EligibleTime); an operator lets it
  # start now, with the time to finish, once the node has ended its run before (slurmd
  # refuses a second copy of a job whose first is still ending, and fails it).
  while not cluster.idle() or processes_of(model_dir):
    assert time.monotonic() < deadline, cluster.explain(job_id, fields, output)
    time.sleep(0.3)
  # slurmd refuses a run whose credential is not newer, to the second, than the
  # revocation of the run before ("Job credential revoked"): one more second.
  time.sleep(1.5)
  cluster.command("scontrol", "update", f"JobId={job_id}", "StartTime=now", "TimeLimit=10")
  fields = cluster.wait(job_id, timeout=300)
  with open(output) as f:
    printed = f.read()
  assert (fields["JobState"], fields["Restarts"]) == ("COMPLETED", "1"), (
      cluster.explain(job_id, fields, output))
  # SLURM's accounting keeps the run it requeued.
  assert [state for state, _ in cluster.runs(job_id)] == ["REQUEUED", "COMPLETED"]
  saved = re.search(r"estimator-dist: preempted at global step (\d+): saved "
                    rf"{re.escape(model_dir)}/model\.ckpt-(\d+);", printed)
  assert saved and saved.group(1) == saved.group(2), printed[-5000:]
  step = int(saved.group(1))
  assert 0 < step < steps, printed[-5000:]
  assert (f"estimator-dist slurm: job {job_id} was preempted and saved its work (exit code "
          f"200)") in printed
  assert f"Restoring parameters from {model_dir}/model.ckpt-{step}\n" in printed
  # It trained to the saved step, then the rest: every step once.
  assert sorted(map(int, re.findall(r"^steps_run=(\d+)$", printed, re.M))) == (
      sorted([steps - step, step])), printed[-5000:]
  found = helpers.summaries(printed)
  assert len(found) == 1 and int(found[0]["steps"]) == steps, printed[-5000:]
  assert not processes_of(model_dir)
  print(f"job {job_id}: preempted at step {step}, requeued, completed at {steps}")

def test_two_jobs_share_the_node_with_a_sites_options_and_ports_of_their_own(
    cluster, monkeypatch, tmp_path):
  """Two multi_worker jobs of one task per CPU, on the node's two CPUs at once, with the
  options a site asks for and its preamble, and without --port_base: each job's servers
  take ports of its own job id, so both finish (with one port base for all, 8888 as it
  was, the second job's servers could not listen). sbatch --test-only accepts a script
  with every option this cluster has (it has no node features nor GRES, which
  --constraint and --gres would need)."""
  monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
  site = ["--account=ml-team", "--qos=normal", "--mem=600M", "--time=10",
          "--partition=debug", "--sbatch=--mail-type=NONE",
          "--preamble=echo \"preamble ran: $SLURM_JOB_ID\""]
  tested = slurm.script_from_args([
      "--strategy=multi_worker", "--num_workers=2", *site, "--exclusive",
      "--output=job-%j.out", "--", *PROGRAM])
  path = tmp_path / "tested.sbatch"
  path.write_text(tested)
  accepted = subprocess.run(["sbatch", "--test-only", str(path)], env=cluster.env,
                            capture_output=True, text=True, timeout=60, check=False)
  assert accepted.returncode == 0 and "to start at" in accepted.stderr, accepted
  jobs = []
  for name in ("first", "second"):
    model_dir, output = str(tmp_path / name), str(tmp_path / f"{name}.out")
    text = slurm.script_from_args([
        "--strategy=multi_worker", "--num_workers=2", "--overcommit", *site, "--", *PROGRAM,
        f"--model_dir={model_dir}", "--train_steps=300", "--step_secs=0.02"])
    jobs.append((cluster.sbatch(text, output=output), model_dir, output))
  deadline = time.monotonic() + 120
  while {cluster.job(job_id)["JobState"] for job_id, _, _ in jobs} != {"RUNNING"}:
    assert time.monotonic() < deadline, [cluster.job(job_id) for job_id, _, _ in jobs]
    time.sleep(0.2)
  for job_id, model_dir, output in jobs:
    fields = cluster.wait(job_id, timeout=300)
    with open(output) as f:
      printed = f.read()
    assert (fields["JobState"], fields["ExitCode"]) == ("COMPLETED", "0:0"), printed[-5000:]
    assert f"preamble ran: {job_id}" in printed, printed[-3000:]
    summary, = helpers.summaries(printed)
    assert summary["steps"] == "300", summary
    assert not processes_of(model_dir)
