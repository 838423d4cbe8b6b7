"""Trust, for real: no other user gets in, nothing is orphaned, stops are fast, stalls are
named, and no wrong result passes as success."""

import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import types

import psutil
import pytest
import tensorflow as tf

from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.contract import env_vars
from estimator_dist.jobs import model_dir_arg
from estimator_dist.outputs import best_checkpoints
from estimator_dist.outputs import checkpoints
from estimator_dist.supervision import local_cluster
from estimator_dist.task import best_checkpoint_keeper
from tests import helpers

pytestmark = pytest.mark.processes

LONG = ["--train_steps=100000", "--save_checkpoints_steps=1000000"]
NOBODY = 65534
# Connects to each 127.0.0.1 port given; prints the ports that accepted. (bash: the
# interpreters here may sit where nobody may not read.)
PROBE = """
for port in "$@"; do
  if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then echo "$port"; fi
done
"""


def job_processes(job):
  launcher_process = psutil.Process(job.process.pid)
  return [launcher_process] + launcher_process.children(recursive=True)


def alive(processes):
  found = []
  for p in processes:
    try:
      if p.status() != psutil.STATUS_ZOMBIE:
        found.append(p)
    except psutil.NoSuchProcess:
      pass
  return found


def _listening(pid, owned=lambda inode: True):
  ports = set()
  for table in ("tcp", "tcp6"):
    with open(f"/proc/{pid}/net/{table}") as f:
      rows = [line.split() for line in f.readlines()[1:]]
    ports |= {int(row[1].rsplit(":", 1)[1], 16) for row in rows
              if row[3] == "0A" and owned(row[9])}  # LISTEN
  return ports


def listening_ports(processes):
  """The TCP ports the job's processes listen on, as each sees its own network.

  (psutil reads the caller's /proc/net, so a private network would look empty.)
  """
  ports = set()
  for p in alive(processes):
    try:
      sockets = {os.readlink(f"/proc/{p.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{p.pid}/fd")}
    except OSError:
      continue
    ports |= _listening(p.pid, lambda inode, sockets=sockets: f"socket:[{inode}]" in sockets)
  return ports


def host_ports():
  """The ports some process of this (the host's) network listens on."""
  return _listening(os.getpid())


def is_task(process, role):
  """Whether `process` is the program of a task of `role`, not one of the processes that
  start it in the job's namespaces (`env ... nsenter ... -- env ... program`): the first
  `env`, caught before it runs nsenter, is a child of the launcher with the task's
  command and environment."""
  try:
    command = process.cmdline()
    return ("tests.programs.plain_model" in command and command[0] not in ("env", "nsenter") and
            f'"type": "{role}"' in process.environ().get("TF_CONFIG", ""))
  except psutil.Error:
    return False


def start_training(strategy, *args, model_dir, program_args=LONG):
  """A job of `strategy` on 2 workers, returned once it trains (its chief logged a step)."""
  job = helpers.Job(f"--strategy={strategy}", "--num_workers=2", *args,
                    program_args=[f"--model_dir={model_dir}", *program_args])
  deadline = time.monotonic() + 120
  while not any("step = " in line for _, line in job.lines):
    assert job.process.poll() is None and time.monotonic() < deadline, job.output[-4000:]
    time.sleep(0.2)
  return job


def probe_as_nobody(ports):
  """The ports a process of uid nobody on the host network reaches."""
  result = subprocess.run(
      ["bash", "-c", PROBE, "probe", *map(str, sorted(ports))], capture_output=True,
      text=True, timeout=60, cwd="/", env=helpers.child_env(),
      preexec_fn=lambda: (os.setgroups([]), os.setgid(NOBODY), os.setuid(NOBODY)))
  assert result.returncode == 0, result.stderr[-2000:]
  return sorted(int(port) for port in result.stdout.split())


def launcher_dirs(pid, temporary_dir=None):
  """The temporary and shared-memory directories the launcher `pid` made (job_dirs)."""
  return sorted(glob.glob(f"{temporary_dir or tempfile.gettempdir()}/estimator_dist_{pid}-*") +
                glob.glob(f"/dev/shm/estimator_dist_{pid}-*"))


def gone_within(processes, secs):
  """Seconds until every process ended; fails past `secs`."""
  start = time.monotonic()
  while alive(processes):
    waited = time.monotonic() - start
    assert waited < secs, [" ".join(p.cmdline())[:120] for p in alive(processes)]
    time.sleep(0.05)
  return time.monotonic() - start


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to uid nobody needs root")


@needs_root
@pytest.mark.parametrize("strategy,args", [
    ("multi_worker", []), ("parameter_server", []), ("horovod", ["--horovod_controller=mpi"]),
    ("horovod", ["--horovod_controller=gloo"])])
def test_no_other_user_reaches_a_job_and_ctrl_c_stops_it_at_once(strategy, args, tmp_path):
  job = start_training(strategy, *args, model_dir=str(tmp_path))
  try:
    assert job.lines[0][1].startswith("estimator-dist launch: isolation: private"), (
        job.output[:2000])
    processes = job_processes(job)
    # A port that some other process listens on here too cannot tell anything.
    ports = listening_ports(processes) - host_ports()
    assert ports, job.output[-3000:]
    assert probe_as_nobody(ports) == []
    made = launcher_dirs(job.process.pid)
    # The job's mailbox, the tasks' TMPDIR, MPI's shared memory.
    assert len(made) == 3, made
    # Ctrl-C again and again (at least 3 times) until the launcher ends: one during the
    # stop or the removal of the directories must not cut it short.
    start, presses = time.monotonic(), 0
    while presses < 3 or job.process.poll() is None:
      job.process.send_signal(signal.SIGINT)
      presses += 1
      time.sleep(0.02)
    gone_within(processes, 3)
    print(f"measured: Ctrl-C ({presses} times) of {strategy} {args}: every process gone "
          f"and the launcher ended in {time.monotonic() - start:.2f} s")
    assert job.wait(10) == 128 + signal.SIGINT
    assert launcher_dirs(job.process.pid) == []
  finally:
    job.kill()


def test_on_the_host_network_other_users_reach_the_job_and_nothing_outlives_its_killed_launcher(
    tmp_path):
  """The probe itself works: without the private network, nobody reaches the servers
  (root only: the probe switches to uid nobody). Then the launcher's SIGKILL, as below."""
  job = start_training("multi_worker", "--isolation=host", model_dir=str(tmp_path))
  mapped = None
  try:
    assert job.lines[0][1].startswith("estimator-dist launch: isolation: host network"), (
        job.output[:2000])
    processes = job_processes(job)
    if os.geteuid() == 0:
      ports = listening_ports(processes)
      assert probe_as_nobody(ports) == sorted(ports)
    assert len(processes) > 2
    mapped = job.held_shared_memory()
    os.kill(job.process.pid, signal.SIGKILL)
    print(f"measured: SIGKILL of the launcher of multi_worker ['--isolation=host']: every "
          f"process gone in {gone_within(processes, 5):.2f} s")
  finally:
    job.kill(mapped)


# multi_worker on the host network: in the test above, one job for both claims;
# parameter_server: test_the_next_launch_removes_what_a_killed_launcher_left.
@pytest.mark.parametrize("strategy,args", [
    ("multi_worker", []), ("mirrored", []),
    ("horovod", ["--horovod_controller=mpi"]), ("horovod", ["--horovod_controller=gloo"]),
    ("horovod", ["--isolation=host"])])
def test_nothing_outlives_a_killed_launcher(strategy, args, tmp_path):
  job = start_training(strategy, *args, model_dir=str(tmp_path))
  mapped = None
  try:
    processes = job_processes(job)
    assert len(processes) > 2
    mapped = job.held_shared_memory()
    os.kill(job.process.pid, signal.SIGKILL)
    print(f"measured: SIGKILL of the launcher of {strategy} {args}: every process gone in "
          f"{gone_within(processes, 5):.2f} s")
  finally:
    job.kill(mapped)


def test_a_failing_task_ends_the_job_within_3_s(tmp_path):
  job = start_training("parameter_server", model_dir=str(tmp_path))
  try:
    processes = job_processes(job)
    worker = next(p for p in processes if is_task(p, "worker"))
    worker.kill()
    print(f"measured: a killed worker of parameter_server: every process gone in "
          f"{gone_within(processes, 3):.2f} s")
    assert job.wait(10) != 0
  finally:
    job.kill()


def test_a_worker_stopped_at_start_is_noticed(tmp_path):
  """Stopped before its first heartbeat: the launcher stops the job after the timeout."""
  job = helpers.Job("--strategy=multi_worker", "--num_workers=2", "--hang_timeout_secs=10",
                    program_args=[f"--model_dir={tmp_path}", *LONG])
  try:
    deadline = time.monotonic() + 30
    while True:
      workers = [p for p in job_processes(job) if is_task(p, "worker")]
      if workers:
        break
      assert time.monotonic() < deadline, job.output
      time.sleep(0.05)
    workers[0].send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    assert job.wait(120) == 124, job.output[-3000:]
    noticed, line = job.first("; stopping the job")  # By heartbeat, or as stopped.
    assert noticed is not None and "worker:0" in line, job.output[-3000:]
    assert noticed - stopped_at < 10 + 5, line
  finally:
    job.kill()


@pytest.mark.parametrize("strategy,cluster,missing", [
    ("multi_worker", {"chief": ["127.0.0.1:{0}"], "worker": ["127.0.0.1:{1}"]}, "worker:0"),
    ("parameter_server", {"chief": ["127.0.0.1:{0}"], "ps": ["127.0.0.1:{1}"]}, "ps:0")])
def test_a_task_started_by_hand_whose_peer_never_comes_names_it(strategy, cluster, missing,
                                                                 tmp_path):
  ports = local_cluster.free_ports(2)
  spec = {role: [a.format(*ports) for a in addresses] for role, addresses in cluster.items()}
  code, output = _by_hand(strategy, spec, tmp_path)
  # TensorFlow waits holding the interpreter and catches SIGTERM: the watchdog, a
  # process of its own, kills it.
  assert code == -signal.SIGKILL, output[-3000:]
  assert (re.search(r"error: chief:0 has waited [7-9] s", output) and
          f"for {missing} at 127.0.0.1:{ports[1]} (no answer)" in output), output[-3000:]


def test_wrong_results_are_refused(tmp_path):
  """An empty dataset, a TF_CONFIG key typo, a second job on one model_dir, a checkpoint
  of another model: each ends with one line naming it. The job of the empty dataset had
  no model_dir: the temporary one the launcher made for it goes with the failure."""
  code, output = helpers.launch("multi_worker", "tests.programs.plain_model", "--examples=0")
  assert code == 2 and ("error: the training input_fn train_input_fn gives no data"
                        in output), output[-3000:]
  made = output.split("model_dir=", 1)[1].split(" ", 1)[0]
  assert f"removed {made}: the job failed before writing a checkpoint" in output
  assert not os.path.exists(made)

  env = helpers.child_env(TF_CONFIG='{"clutser": {"chief": ["127.0.0.1:1"]}}')
  code, output = helpers.run([helpers.PYTHON, "-m", "tests.programs.plain_model",
                              "--strategy=multi_worker", f"--model_dir={tmp_path}"], env=env)
  assert code == 2 and "error: TF_CONFIG key is 'clutser': did you mean 'cluster'?" in output

  first = start_training("multi_worker", model_dir=str(tmp_path / "shared"))
  try:
    code, output = helpers.launch("multi_worker", "tests.programs.plain_model",
                                  f"--model_dir={tmp_path / 'shared'}")
    assert code == 2, output[-3000:]
    assert (f"model_dir {tmp_path / 'shared'} is in use by another job: pid "
            f"{first.process.pid} on " in output), output[-3000:]
  finally:
    first.kill()  # SIGKILL: the lock stays, and the next job takes it over.
  code, output = helpers.launch("local", "model_zoo.mnist_dnn", f"--model_dir={tmp_path / 'shared'}",
                                "--train_steps=5", num_workers=1)
  assert "which is no longer running; taking the lock over" in output, output[-3000:]
  assert code == 2 and "is not of this model: " in output, output[-3000:]


def test_the_model_dir_flag_in_every_form_absl_reads():
  assert model_dir_arg.program_model_dir(["--model_dir", "/a"]) == "/a"
  assert model_dir_arg.program_model_dir(["-model_dir=/b", "--x=1"]) == "/b"
  assert model_dir_arg.program_model_dir(["-model_dir", "/c", "--", "--model_dir=/d"]) == "/c"
  # A job given `--model_dir DIR`: the truncated checkpoint's first job, below.


def test_a_truncated_checkpoint_is_set_aside_and_training_resumes_from_the_one_before(
    tmp_path):
  # The first job names its model_dir in two arguments, as absl also reads it.
  code, output = helpers.launch("local", "tests.programs.plain_model", "--model_dir",
                                str(tmp_path), "--save_checkpoints_steps=10",
                                "--train_steps=30", num_workers=1)
  assert code == 0 and f"model_dir={tmp_path}\n" in output, output[-3000:]
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-30")
  args = ("--save_checkpoints_steps=10", f"--model_dir={tmp_path}")
  data = tmp_path / "model.ckpt-30.data-00000-of-00001"
  data.write_bytes(data.read_bytes()[:data.stat().st_size // 2])
  code, output = helpers.launch("local", "tests.programs.plain_model", *args,
                                "--train_steps=40", num_workers=1)
  assert code == 0, output[-3000:]
  assert (f"checkpoint model.ckpt-30 cannot be read in full (moved to {tmp_path}/unreadable); "
          f"training resumes from {tmp_path}/model.ckpt-20" in output), output[-3000:]
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-40")


# A temporary model_dir of a job that failed at once is removed: the empty dataset's job
# in test_wrong_results_are_refused.


# The evaluator that ends right after the final checkpoint, although its throttle is 600 s:
# integration_test's parameter_server job.


def test_two_horovod_mpi_jobs_at_once_both_finish(tmp_path):
  """In its own PID namespace every job's mpirun has the same small pid, which Open MPI
  names its session directory and shared memory after: each job gets its own."""
  jobs = [helpers.Job("--strategy=horovod", "--num_workers=2", "--horovod_controller=mpi",
                      program_args=[f"--model_dir={tmp_path / str(i)}", "--train_steps=200"])
          for i in range(2)]
  try:
    assert [job.wait(240) for job in jobs] == [0, 0], [j.output[-2000:] for j in jobs]
  finally:
    for job in jobs:
      job.kill()


def _squat(port):
  """A plain TCP listener on 127.0.0.1:`port` that accepts and never speaks."""
  s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  s.bind(("127.0.0.1", port))
  s.listen(8)
  return s


def _by_hand(strategy, spec, tmp_path):
  """Runs the chief of `spec` by hand, with a 7 s startup timeout; (exit code, output).

  Its watchdog ends it: a run that outlives the startup timeout by 100 s fails the test.
  """
  env = helpers.child_env(**{"TF_CONFIG": cluster_lib.tf_config(spec, "chief", 0),
                             env_vars.STARTUP_TIMEOUT_SECS: "7"})
  return helpers.run([helpers.PYTHON, "-m", "tests.programs.plain_model",
                      f"--strategy={strategy}", f"--model_dir={tmp_path}"], env=env,
                     timeout=120)


def test_a_task_whose_port_is_taken_names_it_and_contacts_no_peer(tmp_path):
  chief, worker = local_cluster.free_ports(2)
  with _squat(chief), _squat(worker) as peer:
    peer.settimeout(0)
    code, output = _by_hand("multi_worker", {"chief": [f"127.0.0.1:{chief}"],
                                              "worker": [f"127.0.0.1:{worker}"]}, tmp_path)
    assert code == 75, output[-3000:]
    assert (f"error: chief:0 cannot listen on 127.0.0.1:{chief}: another process holds port "
            f"{chief}." in output), output[-3000:]
    with pytest.raises(BlockingIOError):  # It ended before talking to any peer.
      peer.accept()


def test_a_peer_that_answers_but_never_serves_is_named_with_the_phase(tmp_path):
  """The cluster is reached (every port answers), but the session never comes."""
  chief, worker = local_cluster.free_ports(2)
  with _squat(worker):
    code, output = _by_hand("multi_worker", {"chief": [f"127.0.0.1:{chief}"],
                                             "worker": [f"127.0.0.1:{worker}"]}, tmp_path)
  assert code == -signal.SIGKILL, output[-3000:]
  assert ("in phase 'cluster reached' although every peer answers (one of them may be "
          "stuck)" in output), output[-3000:]


def test_the_launcher_starts_again_on_new_ports_when_one_is_taken(tmp_path):
  """On the host network another process takes the chief's port before it listens."""
  job = helpers.Job("--strategy=multi_worker", "--num_workers=2", "--isolation=host",
                    program_args=[f"--model_dir={tmp_path}", "--train_steps=50"])
  squatter = None
  try:
    deadline = time.monotonic() + 60
    while squatter is None:
      _, line = job.first("estimator-dist launch: cluster: chief:0 at 127.0.0.1:")
      if line:  # The tasks import TensorFlow for seconds before they listen.
        port = int(line.split("chief:0 at 127.0.0.1:")[1].split(",")[0])
        squatter = _squat(port)
      assert time.monotonic() < deadline, job.output
      time.sleep(0.01)
    assert job.wait(240) == 0, job.output[-3000:]
    output = job.output
    assert (f"error: chief:0 cannot listen on 127.0.0.1:{port}: another process holds "
            f"port {port}." in output), output[-3000:]
    assert ("another process took a port of the job before its task listened on it; "
            "starting every task again on new ports (1 of 3)" in output), output[-3000:]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-50")
  finally:
    job.kill()
    if squatter:
      squatter.close()


@pytest.mark.parametrize("strategy, exiting, code, launch_args, restarts", [
    ("local", "chief", 75, (), 0),  # EX_TEMPFAIL: once taken for a taken port.
    ("multi_worker", "worker", 75, (), 0),
    ("multi_worker", "worker", 3, ("--max_restarts=1",), 1),  # Once taken for divergence.
])
def test_a_programs_own_exit_code_is_its_own(tmp_path, strategy, exiting, code, launch_args,
                                             restarts):
  """A program that trains well, then exits with a code the toolkit also uses for its
  verdicts: the code passes through, named as the program's, and --max_restarts applies
  to it. The toolkit's verdicts are messages in the job's mailbox, never read from a code
  (the verdicts themselves: the taken port above, divergence and preemption tests)."""
  started = time.monotonic()
  result, output = helpers.launch(
      strategy, "tests.programs.own_exit_code", f"--exit_code={code}", f"--exiting={exiting}",
      f"--model_dir={tmp_path}", num_workers=1 if strategy == "local" else 2,
      launch_args=launch_args, timeout=240)
  assert result == code, output[-3000:]
  assert output.count(f"the program exits with its own code {code}") == restarts + 1, (
      output[-3000:])
  assert "new ports" not in output and "diverged" not in output, output[-3000:]
  assert (f"exit code {code} is the program's own, not a verdict of estimator_dist"
          in output), output[-3000:]
  assert ("restart 1 of 1" in output) == bool(restarts), output[-3000:]
  print(f"measured: {strategy}, {exiting} exits {code} after training: the job ended "
        f"with it in {time.monotonic() - started:.1f} s, {restarts} restart(s)")


@pytest.fixture
def small_disk(tmp_path):
  """A 64 MB file system of its own (tmpfs), unmounted at the end. (A job refuses to start
  with less than model_dir_check.MIN_FREE_BYTES free.)"""
  yield from tmpfs(tmp_path / "disk", "size=64m")


def tmpfs(path, options):
  """Mounts a tmpfs with `options` at `path` (made) and yields it; unmounted at the end,
  also when the test fails."""
  path.mkdir()
  subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
  try:
    yield path
  finally:
    subprocess.run(["umount", "-l", str(path)], check=False)


@needs_root
def test_a_full_disk_leaves_a_checkpoint_to_resume_from(small_disk):
  model_dir = small_disk / "model"
  # Unbuffered: a buffered file kept the last bytes that did not fit, and raised ENOSPC
  # again as it closed, outside the check that the disk is full.
  filler = open(small_disk / "filler", "wb", buffering=0)  # pylint: disable=consider-using-with
  job = None
  try:
    job = helpers.Job("--strategy=local", "--num_workers=1",
                      program_args=[f"--model_dir={model_dir}", "--train_steps=100000",
                                    "--save_checkpoints_steps=20"])
    deadline = time.monotonic() + 120
    while not (model_dir / "model.ckpt-40.meta").exists():
      assert job.process.poll() is None and time.monotonic() < deadline, job.output[-3000:]
      time.sleep(0.1)
    with pytest.raises(OSError):  # Until the disk is full.
      while True:
        filler.write(b"\0" * 65536)
    assert job.wait(120) == 1, job.output[-3000:]
  finally:
    filler.close()
    if job:
      job.kill()
  output = job.output
  assert "error: no space left on the device of " in output, output[-3000:]
  latest = tf.train.latest_checkpoint(str(model_dir))
  assert latest and f"The checkpoint index names {latest}, the newest complete one." in output
  assert checkpoints.complete(latest)
  assert not [n for n in os.listdir(model_dir) if ".tmp" in n or "tempstate" in n]
  os.remove(small_disk / "filler")
  step = int(latest.rsplit("-", 1)[1])
  code, output = helpers.launch("local", "tests.programs.plain_model",
                                f"--model_dir={model_dir}", f"--train_steps={step + 10}",
                                num_workers=1)
  assert code == 0 and f"Restoring parameters from {latest}" in helpers.task_logs(
      str(model_dir)), output[-3000:]


# Refusals at the door: one line with the path and the fix, before any task starts.

@pytest.fixture
def read_only_dir(tmp_path):
  """A read-only file system of its own (tmpfs mounted ro): root writes wherever the
  permission bits say not, but not there. Unmounted at the end, also when the test fails."""
  yield from tmpfs(tmp_path / "read_only", "ro,size=1m")


def refused_at_the_door(*launch_args, program, env=None):
  """Launches `program` on 2 workers; asserts that the launcher exited 2 having printed
  one line (no traceback, no line of its own or of a task: none started); returns it."""
  code, output = helpers.run(
      helpers.launch_command("--strategy=multi_worker", "--num_workers=2", *launch_args,
                             program=program), timeout=60, env=env)
  assert code == 2, output[-3000:]
  assert len(output.splitlines()) == 1, output
  assert output.startswith("estimator-dist launch: error: "), output
  return output.rstrip("\n")


def plain_model(model_dir, *args):
  return (helpers.PYTHON, "-m", "tests.programs.plain_model", f"--model_dir={model_dir}", *args)


@needs_root
def test_a_read_only_model_dir_is_refused_in_one_line(read_only_dir):
  model_dir = read_only_dir / "model"
  said = (f"--model_dir={model_dir} is on a read-only file system: give a directory you "
          f"can write.")
  assert refused_at_the_door(program=plain_model(model_dir)) == (
      f"estimator-dist launch: error: {said}")
  # A chief started without the launcher checks when it takes the model_dir's lock.
  code, output = helpers.run([*plain_model(model_dir), "--strategy=local"], timeout=120)
  assert code == 2 and f"\nestimator-dist: error: {said}\n" in output, output[-3000:]
  assert "Traceback" not in output, output[-3000:]


@pytest.fixture
def read_only_best(tmp_path):
  """model_dir/best on a read-only file system of its own, in a model_dir that can be
  written; unmounted at the end."""
  (tmp_path / "model").mkdir()
  yield from tmpfs(tmp_path / "model" / "best", "ro,size=1m")


@needs_root
def test_a_read_only_best_directory_is_refused_in_one_line(read_only_best):
  # It trained to the end, then failed (exit 1) with a PermissionDeniedError raised by the
  # cleanup in the handler of the first one.
  best, model_dir = read_only_best, read_only_best.parent
  said = (f"{best} (where --keep_best_checkpoints keeps the best checkpoints) is on a "
          f"read-only file system: give a --model_dir whose best/ is a directory you can "
          f"write.")
  program = plain_model(model_dir, "--keep_best_checkpoints=2")
  assert refused_at_the_door(program=program) == f"estimator-dist launch: error: {said}"
  # Started without the launcher (or with best_checkpoints= in its code), the keeper refuses.
  code, output = helpers.run([*program, "--strategy=local"], timeout=120)
  assert code == 2 and f"\nestimator-dist: error: {said}\n" in output, output[-3000:]
  assert "Traceback" not in output and "step = " not in output, output[-3000:]
  # Should best/ turn read-only while the job runs, the keeper raises the copy's error,
  # not one of its cleanup.
  checkpoint = str(model_dir / "model.ckpt-7")
  tf.train.Checkpoint(v=tf.Variable(1.0)).write(checkpoint)
  keeper = best_checkpoint_keeper.Keeper(best_checkpoints.BestCheckpoints(keep=1))
  with pytest.raises(tf.errors.PermissionDeniedError, match="Read-only file system") as raised:
    keeper.export(types.SimpleNamespace(model_dir=str(model_dir)), None, checkpoint,
                  {"global_step": 7, "loss": 0.5}, False)
  assert raised.value.__context__ is None, raised.value.__context__


@needs_root
def test_a_nearly_full_disk_is_refused_in_one_line(small_disk):
  with open(small_disk / "filler", "wb") as f:  # All but 8 MB.
    f.write(b"\0" * (shutil.disk_usage(small_disk).free - 8 * 2**20))
  line = refused_at_the_door(program=plain_model(small_disk / "model"))
  assert re.fullmatch(
      rf"estimator-dist launch: error: --model_dir={small_disk}/model has [78] MB free on its "
      rf"file system, below the 50 MB a job needs for its checkpoints: free space there or "
      rf"give a directory on another disk\.", line), line


def test_the_other_start_up_checks_are_one_line_too(tmp_path):
  """A model_dir that is a file or under one; a program that is missing or not
  executable (on the host network these were tracebacks)."""
  a_file = tmp_path / "a_file"
  a_file.write_text("#!/bin/sh\n")
  prefix = "estimator-dist launch: error: "
  assert refused_at_the_door(program=plain_model(a_file)) == (
      f"{prefix}--model_dir={a_file} is a file, not a directory: give a directory you can "
      f"write.")
  assert refused_at_the_door(program=plain_model(a_file / "model")) == (
      f"{prefix}--model_dir={a_file}/model cannot be made: {a_file} is a file, not a "
      f"directory: give a directory you can write.")
  model_dir, missing = f"--model_dir={tmp_path / 'model'}", tmp_path / "train"
  assert refused_at_the_door("--isolation=host", program=(str(missing), model_dir)) == (
      f"{prefix}the program {missing} does not exist: give the path of the program to run "
      f"after --.")
  assert refused_at_the_door("--isolation=host", program=(str(a_file), model_dir)) == (
      f"{prefix}the program {a_file} is not executable: chmod +x it, or run it with its "
      f"interpreter (-- python train.py).")
  # Once the cluster was built and every task failed on its own.
  assert refused_at_the_door(program=(helpers.PYTHON, "nosuch.py", model_dir)) == (
      f"{prefix}the program file nosuch.py does not exist (in {helpers.REPO}): give the "
      f"path of the program to run after --.")
  # A `python` on PATH of another environment, without TensorFlow (a Python of its own).
  bare = tmp_path / "bare"
  subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True,
                 timeout=120)
  env = helpers.child_env(PATH=f"{bare / 'bin'}{os.pathsep}{os.environ['PATH']}")
  assert refused_at_the_door(program=("python", "-m", "tests.programs.ignores_cluster"),
                             env=env) == (
      f"{prefix}-- python runs {bare / 'bin' / 'python'}, which cannot import tensorflow; "
      f"the launcher's own Python can: -- {helpers.PYTHON} -m "
      f"tests.programs.ignores_cluster (or activate its environment first).")


def test_a_job_whose_servers_would_listen_on_every_interface_needs_a_flag(tmp_path):
  """No C compiler on PATH and no library built: --isolation=host refuses, and runs with
  --allow_every_interface, saying so."""
  (tmp_path / "bin").mkdir()  # A PATH with no compiler; the commands are absolute paths.
  (tmp_path / "cache").mkdir()
  env = helpers.child_env(PATH=str(tmp_path / "bin"),
                          **{env_vars.CACHE: str(tmp_path / "cache")})
  env.pop("CC", None)
  program = plain_model(tmp_path / "model", "--train_steps=5")
  cause = ("the library that keeps the job's servers on loopback cannot be built (there is "
           "no C compiler (install gcc)), so they")
  assert refused_at_the_door("--isolation=host", program=program, env=env) == (
      f"estimator-dist launch: error: --isolation=host: {cause} would listen on every "
      f"interface, reachable from other machines at this host's addresses. Install gcc and "
      f"run `make setup` (it builds the library once), or pass --allow_every_interface to "
      f"accept that the servers listen on every interface.")
  job = helpers.Job(command=helpers.launch_command(
      "--strategy=multi_worker", "--num_workers=2", "--isolation=host",
      "--allow_every_interface", program=program), env=env)
  try:
    addresses = listening_addresses_until_the_end(job)
    assert job.wait(30) == 0, job.output[-3000:]
  finally:
    job.kill()
  assert (f"estimator-dist launch: --allow_every_interface: {cause} listen on every "
          f"interface, reachable from other machines at this host's addresses"
          in job.output), job.output[-3000:]
  print(f"measured: the job listened on {sorted(addresses)}")
  assert "0.0.0.0" in addresses or "::" in addresses, addresses  # As the refusal said.


def listening_addresses_until_the_end(job, timeout=240):
  """The addresses the job's processes listened on, seen until the launcher exited."""
  addresses = set()
  deadline = time.monotonic() + timeout
  while job.process.poll() is None and time.monotonic() < deadline:
    try:
      processes = alive(job_processes(job))
    except psutil.NoSuchProcess:
      break  # The launcher is gone.
    for p in processes:
      try:
        addresses |= {c.laddr.ip for c in p.net_connections("inet")
                      if c.status == psutil.CONN_LISTEN}
      except psutil.Error:
        pass
    time.sleep(0.2)
  return addresses


# Every process of a job is watched, and nothing of it is left behind.

def test_the_next_launch_removes_what_a_killed_launcher_left(tmp_path):
  """A launcher killed with SIGKILL cannot remove its directories: the next launch does,
  naming each, and runs its job. (parameter_server's killed launcher, as the test above
  kills the others': nothing of its job outlives it.)"""
  temporary = tmp_path / "tmp"  # Its own, so no other launch of the machine gets there first.
  temporary.mkdir()
  env = helpers.child_env(TMPDIR=str(temporary))
  job = helpers.Job("--strategy=parameter_server", "--num_workers=2", env=env,
                    program_args=[f"--model_dir={tmp_path / 'first'}", *LONG])
  try:
    deadline = time.monotonic() + 120
    while (len([p for p in job_processes(job) if is_wrapper(p)]) < 3 or  # Every task started,
           not any("step = " in line for _, line in job.lines)):  # and the chief trains.
      assert job.process.poll() is None and time.monotonic() < deadline, job.output[-4000:]
      time.sleep(0.05)
    processes = job_processes(job)
    assert len(processes) > 2
    made = launcher_dirs(job.process.pid, temporary)
    # The job's mailbox, the tasks' TMPDIR, MPI's shared memory.
    assert len(made) == 3, made
    os.kill(job.process.pid, signal.SIGKILL)
    print(f"measured: SIGKILL of the launcher of parameter_server: every process gone in "
          f"{gone_within(processes, 5):.2f} s")
  finally:
    job.kill()
  # Killed, it removed none. (Shared memory is the machine's: another launch running now
  # may remove that one first.)
  left = launcher_dirs(job.process.pid, temporary)
  assert all(path in left for path in made if not path.startswith("/dev/shm/")), left
  code, output = helpers.run(helpers.launch_command(
      "--strategy=local", "--num_workers=1",
      program=(helpers.PYTHON, "-m", "tests.programs.plain_model",
               f"--model_dir={tmp_path / 'second'}", "--train_steps=5")), env=env)
  assert code == 0, output[-3000:]
  for path in made:
    removed = (f"estimator-dist launch: removed {path}, left by launcher {job.process.pid}, "
               f"which has ended\n")
    assert removed in output or (path.startswith("/dev/shm/") and not os.path.exists(path)), (
        output[-3000:])  # (Another launch may have removed the shared memory first.)
  assert launcher_dirs(job.process.pid, temporary) == []


def is_wrapper(process, role=""):
  """Whether `process` is the nsenter that starts a task (of `role`, if given) in the job's
  namespaces: the first process with the task's TF_CONFIG."""
  try:
    return (process.name() == "nsenter" and
            f'"type": "{role}' in process.environ().get("TF_CONFIG", ""))
  except psutil.Error:
    return False


def test_a_stopped_wrapper_of_a_task_ends_the_job_naming_the_task(tmp_path):
  """A stopped nsenter never exits, not even after its task ended: the launcher watches
  every process of a task, not only the one it started or the task's heartbeat."""
  job = helpers.Job("--strategy=parameter_server", "--num_workers=2", "--hang_timeout_secs=10",
                    program_args=[f"--model_dir={tmp_path}", *LONG])
  try:
    deadline = time.monotonic() + 60
    while not (workers := [p for p in job_processes(job) if is_task(p, "worker")]):
      assert job.process.poll() is None and time.monotonic() < deadline, job.output
      time.sleep(0.05)
    wrapper = workers[0].parent()  # Its task runs: it waits for it to exit.
    assert is_wrapper(wrapper, "worker"), wrapper.cmdline()
    wrapper.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    assert job.wait(60) == 124, job.output[-3000:]
    noticed, line = job.first(
        f"worker:0 is stopped: its process {wrapper.pid} (nsenter) has not run")
    assert noticed is not None and noticed - stopped_at < 10 + 5, job.output[-3000:]
    print(f"measured: a stopped nsenter of worker:0 ended the job in "
          f"{time.monotonic() - stopped_at:.1f} s: {line}")
  finally:
    job.kill()


def test_output_that_looks_like_the_summary_neither_hangs_the_job_nor_forges_it(tmp_path):
  """`estimator-dist: summary: none yet` once ended the copying of the task's output: the
  pipe filled (the 2000 lines after it), the task blocked on its next write, and the job
  ended at the hang timeout. The job's summary is the chief's record, never a line."""
  started = time.monotonic()
  code, output = helpers.launch("local", "tests.programs.noisy_summary",
                                f"--model_dir={tmp_path}", num_workers=1, timeout=180)
  assert code == 0, output[-3000:]
  assert "[chief:0] flood 001999 " in output, output[-3000:]  # All of it copied.
  assert output.count("estimator-dist launch: summary\n") == 1, output[-3000:]
  table = output.split("estimator-dist launch: summary\n")[1]
  assert re.search(r"strategy\s+local\n\s+workers\s+1\n", table), table[:500]
  assert re.search(r"steps\s+20\n", table) and "forged" not in table, table[:500]
  print(f"measured: a job whose program printed 'estimator-dist: summary: none yet', a "
        f"forged summary line and 2000 lines ended in {time.monotonic() - started:.1f} s")


@pytest.mark.parametrize("kind, why", [
    ("json", "Expecting ':' delimiter"), ("fifo", "it is not a regular file"),
    ("large", "it is larger than 1048576 bytes"), ("binary", "it is not UTF-8 text"),
    ("none", None)])
def test_whatever_a_program_leaves_for_the_summary_record_is_one_warning(tmp_path, kind, why):
  """A FIFO there once hung the launcher for ever after the job ended, a large file of
  random bytes failed a job that had succeeded with a traceback: now each is one line, and
  the job's own exit code stands. So does a record the chief never wrote."""
  code, output = helpers.launch("local", "tests.programs.noisy_summary", f"--bad_record={kind}",
                                "--flood_lines=1", f"--model_dir={tmp_path}", num_workers=1,
                                timeout=120)
  assert code == 0, output[-3000:]
  warnings = [line for line in output.splitlines() if "summary record" in line]
  assert len(warnings) == 1, warnings
  if why:
    assert "ignored, the job has no summary" in warnings[0] and why in warnings[0], warnings
  else:
    assert warnings[0] == ("estimator-dist launch: no summary: the chief wrote no summary "
                           "record (a program that trains without estimator_dist's "
                           "train_and_evaluate, or that removed it, writes none)"), warnings
  # Not the forged line either.
  assert "estimator-dist launch: summary" not in output, output[-3000:]
