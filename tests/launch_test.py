"""The launcher: free ports, TF_CONFIG per task, prefixed output, and no orphans ever."""

import json
import os
import re
import signal
import subprocess
import time

import psutil
import pytest

from estimator_dist import errors
from estimator_dist.contract import cluster
from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import preload
from estimator_dist.jobs import horovodrun
from estimator_dist.jobs import horovodrun_entry
from estimator_dist.jobs import spec
from estimator_dist.supervision import job_dirs
from estimator_dist.supervision import local_cluster
from estimator_dist.supervision import process_tree
from estimator_dist.watching import live_progress
from tests import helpers

# A task that reports its TF_CONFIG, its arguments and the job's strategy and model_dir
# (its environment), then fails if it is worker:0 (exit 3, after an INFO record in
# TensorFlow's form and a traceback), ends if it is the chief, or else sleeps until it
# is stopped.
TASK = """
import json, os, sys, time, traceback
task = json.loads(os.environ["TF_CONFIG"])["task"] if "TF_CONFIG" in os.environ else None
print("task", json.dumps(task), "argv", " ".join(sys.argv[1:]), "env",
      os.environ.get("ESTIMATOR_DIST_STRATEGY"), os.environ.get("ESTIMATOR_DIST_MODEL_DIR"),
      flush=True)
role = (task or {}).get("type")
if role and role == os.environ.get("FAIL_ROLE"):
    time.sleep(1)
    print("I1129 12:00:12.55 140 estimator.py:1177] Done calling model_fn.", flush=True)
    try:
        raise ValueError("the input is gone")
    except ValueError:
        traceback.print_exc()
    sys.exit(3)
if role and role == os.environ.get("END_ROLE"):
    sys.exit(0)
time.sleep(600)
"""


def run_launcher(*args, env=None, timeout=60, program_args=()):
  return helpers.run(helpers.launch_command(*args, program=(helpers.PYTHON, "-c", TASK,
                                                            *program_args)),
                     env=helpers.child_env(**(env or {})), timeout=timeout)


def test_local_cluster_has_distinct_loopback_ports():
  spec = local_cluster.local_cluster(job("parameter_server", 3, num_ps=2, evaluator=True))
  addresses = [a for role in spec.values() for a in role]
  assert {r: len(a) for r, a in spec.items()} == {"chief": 1, "worker": 2, "ps": 2, "evaluator": 1}
  assert len(set(addresses)) == 6 and all(a.startswith("127.0.0.1:") for a in addresses)


def job(strategy, num_workers=2, **kwargs):
  return spec.JobSpec(strategy=strategy, num_workers=num_workers, command=["python", "t.py"],
                      **kwargs)


@pytest.mark.parametrize("args,message", [
    (("parameter_server", 2, 0, False), "needs --num_ps of at least 1"),
    (("multi_worker", 2, 1, False), "--num_ps=1 applies only to --strategy=parameter_server"),
    (("horovod", 2, 0, True), "--evaluator applies to multi_worker and parameter_server"),
    (("local", 2, 0, False), "use --num_workers=1"),
])
def test_topologies_that_cannot_work(args, message):
  strategy, num_workers, num_ps, evaluator = args
  with pytest.raises(errors.ConfigError, match=message):
    job(strategy, num_workers, num_ps=num_ps, evaluator=evaluator)


def test_a_job_is_a_checked_value():
  value = job("collective_all_reduce", 3, evaluator=True)
  assert (value.strategy, value.num_ps, value.num_tasks) == ("multi_worker", 0, 4)
  assert value.command == ("python", "t.py")  # Run as given: nothing is appended.
  assert job("parameter_server").num_ps == 1
  with pytest.raises(errors.ConfigError, match="give the program to run after --"):
    spec.JobSpec(strategy="multi_worker")


@pytest.mark.processes
def test_every_task_gets_its_tf_config_and_prefix(tmp_path):
  code, output = run_launcher("--strategy=parameter_server", "--num_workers=2",
                              f"--model_dir={tmp_path}", env={"FAIL_ROLE": "worker"},
                              program_args=("--flag",))
  assert code == 3, output
  tasks = {}
  for line in output.splitlines():
    if " task " in line:
      prefix, rest = line.split(" task ", 1)
      tasks[prefix] = json.loads(rest.split(" argv ")[0])
      # The command runs as given; the job's strategy and model_dir are in the environment.
      assert rest.endswith(f"argv --flag env parameter_server {tmp_path}"), rest
  assert tasks == {"[chief:0]": {"type": "chief", "index": 0},
                   "[worker:0]": {"type": "worker", "index": 0},
                   "[ps:0]": {"type": "ps", "index": 0}}


@pytest.mark.processes
def test_a_failing_task_stops_the_others_and_gives_its_code():
  # The others sleep for 600 s: run_launcher's timeout (60 s) fails a launcher that waits.
  code, output = run_launcher("--strategy=multi_worker", "--num_workers=3",
                              "--terminal=default", env={"FAIL_ROLE": "worker"})
  assert code == 3, output
  assert "exited with code 3; stopping the other tasks" in output
  # The default terminal shows the error, not TensorFlow's INFO line, which the task's
  # log in the kept temporary model_dir has.
  assert "[worker:0] Traceback (most recent call last):" in output, output
  assert "[worker:0] ValueError: the input is gone" in output, output
  assert "Done calling model_fn" not in output, output
  logs = re.search(r"left out \d+ of the tasks' lines .*: every line is in (\S+)\n", output)
  with open(os.path.join(logs[1], "worker-0.log")) as f:
    assert "Done calling model_fn" in f.read()


@pytest.mark.processes
def test_ps_that_never_exits_is_stopped_after_the_shutdown_timeout():
  code, output = run_launcher("--strategy=parameter_server", "--num_workers=1",
                              "--shutdown_timeout_secs=2", env={"END_ROLE": "chief"})
  assert code == 1, output
  assert "training ended but ps:0 did not exit within 2s; stopping them" in output


@pytest.mark.parametrize("strategy,signals,launch_args,code,said", [
    ("parameter_server", [signal.SIGINT], [], 130, "signal 2: stopping all tasks"),
    # horovodrun's semaphores (Gloo); Open MPI's session directory (host network).
    ("horovod", [signal.SIGINT], ["--horovod_controller=gloo"], 130,
     "signal 2: stopping all tasks"),
    ("horovod", [signal.SIGINT], ["--horovod_controller=mpi", "--isolation=host"], 130,
     "signal 2: stopping all tasks"),
    # SIGTERM asks the tasks to save (these never do); a second one stops them at once.
    ("multi_worker", [signal.SIGTERM] * 2, [], 143, "signal 15: stopping all tasks"),
    # Or the grace runs out.
    ("multi_worker", [signal.SIGUSR1], ["--preemption_grace_secs=1"], 138,
     "did not save and stop within 1s; every task was stopped at once")])
@pytest.mark.processes
def test_ctrl_c_stops_every_task_and_leaves_nothing(strategy, signals, launch_args, code,
                                                    said, tmp_path):
  temporary = tmp_path / "tmp"  # The job's own: whatever is left there is the job's.
  temporary.mkdir()
  process = subprocess.Popen(
      helpers.launch_command(f"--strategy={strategy}", "--num_workers=2", *launch_args,
                             program=(helpers.PYTHON, "-c", TASK)),
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=helpers.REPO,
      env=helpers.child_env(TMPDIR=str(temporary)), start_new_session=True)
  started, lines = 0, []
  while started < 2:
    lines.append(process.stdout.readline())
    assert lines[-1], "launcher ended before its tasks started:\n" + "".join(lines)
    started += " task " in lines[-1]
  mapped = process_tree.shared_memory_files(process_tree.descendants(process.pid))
  assert os.listdir(temporary)  # Its heartbeats, at least.
  assert mapped or "--horovod_controller=gloo" not in launch_args  # horovodrun's Events.
  for sig in signals:
    os.kill(process.pid, sig)
    time.sleep(0.5)
  try:
    assert process.wait(30) == code
    assert said in process.stdout.read()
    assert os.listdir(temporary) == []
    assert launcher_shared_memory(process.pid) == []
    assert [name for name in os.listdir("/dev/shm")
            if job_dirs.file_id(f"/dev/shm/{name}") in mapped] == []
  finally:
    if process.poll() is None:
      os.killpg(process.pid, signal.SIGKILL)
    process.stdout.close()


def launcher_shared_memory(pid):
  """The directories the launcher `pid` made in /dev/shm (job_dirs)."""
  return [name for name in os.listdir("/dev/shm") if name.startswith(f"estimator_dist_{pid}-")]


def test_tf_config_written_by_the_launcher_parses():
  spec = local_cluster.local_cluster(job("multi_worker", 2))
  task = cluster.parse_tf_config(cluster.tf_config(spec, "worker", 0))
  assert (task.rank, task.size) == (1, 2)


@pytest.mark.processes
def test_console_script():
  script = os.path.join(os.path.dirname(helpers.PYTHON), "estimator-dist")
  code, output = helpers.run([script, "launch", "--strategy=local", "--num_workers=1", "--",
                               helpers.PYTHON, "-c", "print('hello')"], timeout=60)
  assert code == 0 and "[chief:0] hello" in output, output
  code, output = helpers.run([script, "frobnicate"], timeout=60)
  assert code == 2 and "usage: estimator-dist COMMAND" in output


@pytest.mark.processes
def test_a_bad_command_line_exits_2_under_every_command():
  """An unknown flag or a value a flag refuses: 2, as argparse and horovodrun exit (absl's
  own 1 means a failed run here)."""
  script = os.path.join(os.path.dirname(helpers.PYTHON), "estimator-dist")
  for command in ("launch", "sweep", "slurm", "k8s", "progress", "verify", "bench"):
    code, output = helpers.run([script, command, "--no_such_flag=1"], timeout=120)
    assert code == 2 and "Unknown command line flag 'no_such_flag'" in output, (command, output)
  code, output = helpers.run([script, "launch", "--num_workers=0", "--", "true"], timeout=60)
  assert code == 2 and "--num_workers=0" in output, output


@pytest.mark.processes
def test_a_job_whose_tasks_trained_alone_fails_naming_them(tmp_path):
  """Each task exits 0 having trained on its own (the program ignores the cluster, and
  runs as it is): the job did not train together, and says so instead of succeeding."""
  code, output = helpers.launch("multi_worker", "tests.programs.ignores_cluster",
                                f"--model_dir={tmp_path}", launch_args=["--instrument=off"],
                                timeout=180)
  assert code == 1, output[-3000:]
  assert output.count("trained alone with --strategy local") == 2, output[-3000:]
  assert ("every task exited 0, but the job did not train together under multi_worker: "
          "chief:0 never started the job's strategy; worker:0 never started the job's "
          "strategy. The program ignores the job's cluster" in output), output[-3000:]
  assert "job failed with exit code 1" in output, output[-3000:]


# A Horovod rank that all-reduces its rank and reports what horovodrun gave it; it starts
# Horovod through the toolkit, and so joins the job.
HOROVOD_TASK = """
import os, horovod.tensorflow as hvd, tensorflow as tf, estimator_dist as ed
ed.create_strategy("horovod", cpu_affinity="none")
total = int(hvd.allreduce(tf.constant(hvd.rank()), op=hvd.Sum))
print("rank", hvd.rank(), "size", hvd.size(), "sum", total,
      "fusion", os.environ.get("HOROVOD_FUSION_THRESHOLD"), flush=True)
"""


@pytest.mark.parametrize("where", ["hosts", "hostfile"])
@pytest.mark.processes
def test_horovodrun_on_a_host_list_with_tuning_options(where, tmp_path):
  if where == "hosts":
    place = "--hosts=localhost:1,127.0.0.1:1"
  else:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two slots on this machine\nlocalhost slots=2\n")
    place = f"--hostfile={hostfile}"
  code, output = helpers.run(
      helpers.launch_command("--strategy=horovod", "--num_workers=2", place,
                             "--horovod_controller=gloo",
                             "--horovodrun_args=--fusion-threshold-mb=16",
                             program=(helpers.PYTHON, "-c", HOROVOD_TASK)), timeout=120)
  assert code == 0, output
  for rank in range(2):
    assert f"[worker:{rank}] rank {rank} size 2 sum 1 fusion {16 * 1024 * 1024}" in output


@pytest.mark.parametrize("kwargs,message", [
    ({"hosts": "h1:2,h2:2"},
     "a multi-host Horovod job needs --network_interface: the interface of the private network "
     "its hosts share (for example eth1). Gloo and MPI bind to it; they accept anyone who can "
     "reach their ports."),
    ({"hosts": "h1:1,h2:1", "network_interface": "eth1", "num_workers": 4},
     "--num_workers=4 Horovod ranks need 4 slots, but the hosts have 2 (h1:1, h2:1). Add slots "
     "or hosts."),
    ({"hosts": "h1:two"}, "--hosts item 'h1:two' is not host:slots; write --hosts=host1:2,"
     "host2:2 (one slot per Horovod rank)."),
    ({"hosts": "h1:2", "hostfile": "/tmp/h"}, "give --hosts or --hostfile, not both."),
    ({"hostfile": "/nonexistent/hosts"}, "--hostfile '/nonexistent/hosts' does not exist; give "
     "a file with one 'hostname slots=N' line per machine."),
    ({"extra_args": "-np 8 --cycle-time-ms=2"},
     "--horovodrun_args may not set ['-np']: the launcher sets them from --num_workers, "
     "--hosts/--hostfile, --network_interface, --horovod_controller and --elastic."),
])
def test_horovodrun_command_refuses_what_cannot_work(kwargs, message):
  num_workers = kwargs.pop("num_workers", 2)
  with pytest.raises(errors.ConfigError) as e:
    horovodrun.command(["python", "t.py"], num_workers=num_workers,
                       run=horovodrun.HorovodRun(**kwargs))
  assert str(e.value) == message


def test_horovodrun_command_on_two_hosts():
  command = horovodrun.command(["python", "t.py"], num_workers=4, run=horovodrun.HorovodRun(
      hosts="h1:2,h2:2", network_interface="eth1", controller="mpi",
      extra_args="--cycle-time-ms=2"))
  assert command[3:] == ["--mpi", "-np", "4", "-H", "h1:2,h2:2", "--network-interface", "eth1",
                         "--cycle-time-ms=2", "python", "t.py"]


@pytest.mark.processes  # Horovod's check imports its extension in a process of its own.
def test_horovodrun_asks_about_horovods_build_once_per_install(tmp_path, monkeypatch):
  """Horovod's own answers, each asked when horovodrun needs it and recorded with its
  extensions' sizes and times; a record of another build is asked again."""
  from horovod.common import util  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv(env_vars.CACHE, str(tmp_path))
  asked, horovods = [], util.gloo_built
  monkeypatch.setattr(util, "gloo_built", lambda: asked.append(1) or horovods())
  gloo = horovodrun_entry.built("gloo")
  assert gloo is True and len(asked) == 1
  record_path = tmp_path / horovodrun_entry.RECORD
  record = json.loads(record_path.read_text())
  assert record["built"] == {"gloo": True}, record  # MPI's was not asked.
  assert [os.path.basename(os.path.dirname(path)) for path, _, _ in record["extensions"]] == [
      "tensorflow"], record  # Horovod's TensorFlow extension, this build's.
  assert horovodrun_entry.built("gloo") is True and len(asked) == 1  # Not asked again.
  record["extensions"][0][1] += 1  # Another build of the same file.
  record_path.write_text(json.dumps(record))
  assert horovodrun_entry.built("gloo") is True and len(asked) == 2


def test_a_horovod_job_across_hosts_listens_on_its_interface_only():
  assert horovodrun.HorovodRun().is_local(2)
  assert horovodrun.HorovodRun(network_interface="lo").is_local(2)
  # Hosts an elastic job's discovery script names later are on that interface's network.
  assert not horovodrun.HorovodRun(network_interface="eth1",
                                   elastic=horovodrun.Elastic(1, 2, "/bin/true")).is_local(2)
  run = horovodrun.HorovodRun(hosts="h1:1,h2:1", network_interface="eth1")
  assert not run.is_local(2)
  env = horovodrun.across_hosts_env({"PATH": "/bin", env_vars.BIND_ADDRESS: "127.0.0.1"},
                                   run.network_interface)
  assert env["OMPI_MCA_oob_tcp_if_include"] == "eth1"
  if preload.library() is None:
    pytest.skip("no C compiler to build the preload library")
  library = preload.library()
  assert (env["LD_PRELOAD"], env[env_vars.BIND_INTERFACE]) == (library, "eth1")
  assert env_vars.BIND_ADDRESS not in env  # The interface's address on each host.
  assert env["OMPI_MCA_orte_launch_agent"] == (
      f"env LD_PRELOAD={library} {env_vars.BIND_INTERFACE}=eth1 orted")


LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


# multi_worker, parameter_server and horovod under MPI: integration_test's jobs, which run
# on the host network and look at every socket too.
@pytest.mark.parametrize("strategy,args", [("horovod", ["--horovod_controller=gloo"])])
@pytest.mark.processes
def test_a_local_job_listens_on_loopback_only(strategy, args, tmp_path):
  """TensorFlow, horovodrun and MPI listen on every interface unless the launcher stops them.

  On the host network, that is; by default the job has a network of its own (trust_test).
  """
  process = subprocess.Popen(
      helpers.launch_command(f"--strategy={strategy}", "--num_workers=2", "--isolation=host",
                             *args, program=(helpers.PYTHON, "-m", "tests.programs.plain_model",
                                             f"--model_dir={tmp_path}", "--train_steps=300")),
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=helpers.REPO,
      env=helpers.child_env(), start_new_session=True)
  listening = set()
  try:
    deadline = time.monotonic() + 240
    while process.poll() is None and time.monotonic() < deadline:
      for p in [psutil.Process(process.pid)] + psutil.Process(process.pid).children(True):
        try:
          listening |= {(p.name(), c.laddr.ip) for c in p.net_connections("inet")
                        if c.status == psutil.CONN_LISTEN}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
          pass
      time.sleep(0.2)
    output = process.communicate(timeout=30)[0]
  finally:
    if process.poll() is None:
      os.killpg(process.pid, signal.SIGKILL)
      process.communicate()
  assert process.returncode == 0, output[-3000:]
  assert listening, "no listening socket was seen"
  assert {ip for _, ip in listening} <= LOOPBACK, listening


def test_a_progress_line_names_a_task_behind_by_more_than_its_beats(tmp_path):
  mailbox = mailbox_lib.Mailbox(str(tmp_path))

  def beats(**steps):
    for name, (step, at) in steps.items():
      heartbeat.beat(mailbox.path(mailbox_lib.BEATS, name), heartbeat.Progress(
          step=step, last_step=2000, examples_per_step=64, time=at))
    return heartbeat.progress_of(mailbox)
  # 15 steps/s: one beat a second apart leaves a task up to 15 steps behind.
  tasks = beats(**{"chief:0": (1200, 100.0), "worker:0": (1190, 99.5)})
  assert ", ".join(live_progress.describe(tasks, previous=(900, 80.0), evaluation=(
      1000, {"accuracy": 0.97123, "loss": 0.1}))) == (
      "step 1200/2000 (60 %), 15.0 steps/s, 960 examples/s, ETA 53 s, "
      "eval accuracy 0.9712 @1000")
  tasks = beats(**{"worker:0": (1100, 93.0)})  # Its beats stopped 7 s ago.
  assert ", ".join(live_progress.describe(tasks, previous=(900, 80.0))) == (
      "step 1200/2000 (60 %), 15.0 steps/s, 960 examples/s, ETA 53 s, "
      "slowest worker:0 (-100 steps)")
