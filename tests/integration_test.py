"""Real multi-process training on 127.0.0.1 through the launcher, for every strategy."""

import contextlib
import json
import re

import numpy as np
import psutil
import pytest
import tensorflow as tf

from benchmarks import breakdown
import estimator_dist as ed
from model_zoo import data
from model_zoo import mnist_cnn
from tests import helpers
from tests.programs import plain_model

pytestmark = pytest.mark.processes

STRATEGIES = ["mirrored", "multi_worker", "parameter_server", "horovod"]
# parameter_server runs chief + worker + ps + evaluator. The evaluator's throttle would
# keep it waiting 600 s after an evaluation: it ends right after the final checkpoint.
LAUNCH_ARGS = {"parameter_server": ["--evaluator"]}
PROGRAM_ARGS = {"parameter_server": ["--train_steps=300", "--eval_throttle_secs=600"]}


def train(strategy, program, *args, launch_args=()):
  code, output = helpers.launch(strategy, program, *args, *PROGRAM_ARGS.get(strategy, []),
                                 launch_args=[*LAUNCH_ARGS.get(strategy, []), *launch_args])
  assert code == 0, output[-5000:]
  found = helpers.summaries(output)
  assert len(found) == 1, output[-5000:]
  assert found[0]["strategy"] == strategy
  return found[0], output


# Which shards the logs show: mirrored has one pipeline; Horovod logs from rank 0 only.
SHARDS_LOGGED = {"mirrored": [], "multi_worker": [0, 1], "parameter_server": [0, 1],
                 "horovod": [0]}


def _eval_data():
  """The eval set as plain_model reads it: flat digits."""
  _, (x_eval, y_eval) = data.load()
  return x_eval.reshape(len(x_eval), -1), y_eval


# The jobs whose tasks serve run on the host network: TensorFlow, horovodrun and MPI listen
# on every interface there unless the launcher stops them (by default a job has a network
# of its own: trust_test). mirrored's one process serves nothing. (horovod's Gloo
# controller: launch_test.)
ON_HOST_NETWORK = {"multi_worker", "parameter_server", "horovod"}
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


class ListeningSockets(helpers.Sampler):
  """{(process name, address)} of every socket a process the test started listens on,
  while the `with` block runs: `seen`."""

  def __init__(self):
    super().__init__()
    self.seen = set()

  def sample(self):
    for p in helpers.our_processes():
      with contextlib.suppress(psutil.Error):
        self.seen |= {(p.name(), ip) for ip, _ in helpers.listening(p)}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_single_machine_model_fn_trains_unchanged_and_loads_into_a_plain_estimator(
    strategy, tmp_path):
  """One job asserts what it shows: the accuracy and topology, each worker's shard, the
  scaled rate, metrics a single process recomputes, a checkpoint a plain Estimator
  serves, and, on the host network, servers that listen on loopback only."""
  # multi_worker also says its progress, 600 steps of at least 10 ms each.
  progress = strategy == "multi_worker"
  host = strategy in ON_HOST_NETWORK
  with ListeningSockets() as sockets:
    result, output = train(
        strategy, "tests.programs.plain_model", f"--model_dir={tmp_path}",
        "--profile_steps=100:110",
        *(["--train_steps=600", "--step_secs=0.01"] if progress else []),
        launch_args=["--curves", *(["--progress_secs=0.5"] if progress else []),
                     *(["--isolation=host"] if host else [])])
  if host:
    assert "estimator-dist launch: isolation: host network" in output, output[:2000]
    assert sockets.seen, "no listening socket was seen"
    assert {ip for _, ip in sockets.seen} <= LOOPBACK, sockets.seen
  assert float(result["eval_accuracy"]) >= 0.90
  if strategy == "parameter_server":
    assert "[evaluator:0]" in output and "the evaluator ends" in output, output[-3000:]
    _check_every_worker_updated_the_variables(output, tmp_path)
  assert (result["workers"], result["replicas"]) == (
      ("1", "2") if strategy == "mirrored" else ("2", "2"))
  logged = sorted(int(line.split("training input is shard ")[1].split()[0])
                  for line in output.splitlines() if "training input is shard" in line)
  assert logged == SHARDS_LOGGED[strategy], output[-3000:]
  # The chief logs the effective learning rate once: 0.01 x 2 synchronous replicas.
  chief = "[worker:0]" if strategy == "horovod" else "[chief:0]"
  rates = [line for line in output.splitlines()
           if line.startswith(chief) and "estimator-dist: learning rate" in line]
  expected = "0.01 (from params['learning_rate']) " + (
      "x 1 (none scaling, 2 replicas) = 0.01" if strategy == "parameter_server" else
      "x 2 (linear scaling, 2 replicas) = 0.02")
  assert len(rates) == 1 and rates[0].endswith(expected), rates
  if progress:
    _check_progress_lines(output, result)
  _check_profiles(tmp_path, PROFILED[strategy], asynchronous=strategy == "parameter_server")
  # The launcher draws the job's curves with its summary.
  assert f"estimator-dist launch: the job's curves: {tmp_path}/curves.png" in output
  assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")

  # The reported metrics are a single-process evaluation of the same checkpoint on the
  # same data: each eval example counted once.
  x_eval, y_eval = _eval_data()
  alone = ed.evaluate(plain_model.model_fn, data.input_fn(x_eval, y_eval, shuffle=False),
                      model_dir=str(tmp_path), params={"learning_rate": 0.01,
                                                      "batch_size": 100})
  assert f"{alone['accuracy']:.4f}" == result["eval_accuracy"]
  assert abs(alone["loss"] - float(result["eval_loss"])) <= 1e-4

  # The checkpoint serves a plain, single-process Estimator.
  estimator = tf.estimator.Estimator(plain_model.model_fn, model_dir=str(tmp_path),
                                     params={"learning_rate": 0.01})
  predicted = list(estimator.predict(
      tf.compat.v1.estimator.inputs.numpy_input_fn(x_eval, shuffle=False)))
  assert np.mean(np.array(predicted) == y_eval) >= 0.90


def _check_every_worker_updated_the_variables(output, model_dir):
  """parameter_server: each worker step adds one to the shared global step."""
  steps = [int(line.rsplit("=", 1)[1]) for line in output.splitlines()
           if "steps_run=" in line]
  assert len(steps) == 2 and min(steps) > 0, steps
  # Asynchronous updates. The other worker may land steps after the chief saved the last
  # checkpoint: one in flight, or, when it joins as the chief ends, its first run and the
  # run in which it reads that the end is reached (seen: [300, 2] with 300 saved).
  final = tf.train.load_checkpoint(str(model_dir)).get_tensor("global_step")
  assert final >= 300 and final <= sum(steps) <= final + 2, (steps, final)


# The training tasks, each with its profile (Horovod's ranks: chief:0, worker:1). An
# asynchronous parameter_server worker that starts after the chief passed step 110 has
# none (it says so).
PROFILED = {"mirrored": ["chief_0"], "multi_worker": ["chief_0", "worker_0"],
            "parameter_server": ["chief_0", "worker_0?"], "horovod": ["chief_0", "worker_1"]}


def _check_profiles(model_dir, tasks, *, asynchronous):
  """One profile session of steps 100 to 110, a trace of each task, which the profile
  plugin's own converter reads into TensorBoard's trace viewer."""
  broken_down = 0
  from tensorboard_plugin_profile.convert import raw_to_tool_data  # pylint: disable=g-import-not-at-top
  session = model_dir / "plugins" / "profile" / "steps_100_110"
  traces = sorted(session.glob("*.xplane.pb"))
  names = {t.name[:-len(".xplane.pb")] for t in traces}
  required = {t for t in tasks if not t.endswith("?")}
  assert required <= names <= required | {t.rstrip("?") for t in tasks}, traces
  for trace in traces:
    assert "trace_viewer@^" in raw_to_tool_data.xspace_to_tool_names([str(trace)])
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(trace)], "trace_viewer^", {})
    names = {event.get("name", "") for event in json.loads(data)["traceEvents"]}
    # TensorFlow's executor ran the training graph's ops while it recorded.
    assert {"ExecutorState::Process", "MatMul"} & names and len(names) > 20, (trace, names)
    # The benchmark's breakdown reads it: steps that computed, every instant counted once.
    # An asynchronous task runs only some of the window's global steps, under load as few
    # as one, which marks no whole step.
    read = breakdown.read_trace(str(trace))
    if len(read["steps"]) < 2 and asynchronous:
      continue
    parts = breakdown.of_window(read)
    assert parts["steps"] >= 1 and parts["compute"] > 0, (trace, parts)
    assert sum(parts[p] for p in breakdown.PARTS) == pytest.approx(parts["step"]), parts
    broken_down += 1
  assert broken_down, traces  # At least one task's window.


_PROGRESS = re.compile(r"estimator-dist launch: progress: step (\d+)/(\d+) \((\d+) %\)"
                       r"(?:, ([\d.]+) steps/s, (\d+) examples/s, ETA ([\d.]+) (s|min|h))?")
_SECONDS = {"s": 1, "min": 60, "h": 3600}


def _check_progress_lines(output, result):
  """The launcher's progress lines agree with the job's summary and with themselves (a
  line before the first step of training has no rate yet)."""
  lines = [line for line in output.splitlines()
           if line.startswith("estimator-dist launch: progress:")]
  parsed = [_PROGRESS.match(line) for line in lines]
  assert all(parsed) and sum(bool(m.group(4)) for m in parsed) >= 3, lines
  steps = [int(m.group(1)) for m in parsed]
  assert steps == sorted(steps), lines
  batch = int(result["global_batch"])
  for m in parsed:
    step, last, percent = int(m.group(1)), int(m.group(2)), int(m.group(3))
    assert last == int(result["steps"]) and 0 <= step <= last, m.group(0)
    assert percent == min(100, 100 * step // last), m.group(0)
    if m.group(4):
      rate, examples = float(m.group(4)), int(m.group(5))
      eta = float(m.group(6)) * _SECONDS[m.group(7)]
      assert abs(examples - rate * batch) <= 0.05 * batch + 1, m.group(0)
      assert abs(eta - (last - step) / rate) <= _SECONDS[m.group(7)] + 0.1 * eta, m.group(0)


def test_the_model_zoo_cnn_trains_on_digits(tmp_path):
  """The CNN of `make demo`, under the demo's strategy; the other strategies train the
  lighter model above, where the model is not the point."""
  result, _ = train("multi_worker", "model_zoo.mnist_cnn", f"--model_dir={tmp_path}",
                    "--train_steps=200")
  assert float(result["eval_accuracy"]) >= 0.90
  _, (x_eval, y_eval) = data.load(image_size=28)
  alone = ed.evaluate(mnist_cnn.model_fn, data.input_fn(x_eval, y_eval, shuffle=False),
                      model_dir=str(tmp_path), params={"batch_size": 32})
  assert f"{alone['accuracy']:.4f}" == result["eval_accuracy"]


def test_horovod_with_unequal_shards_completes_on_every_rank():
  # 101 examples in batches of 10: rank 0 holds 6 batches an epoch, rank 1 holds 5.
  _, output = train("horovod", "tests.programs.plain_model", "--examples=101",
                    "--batch_size=10", "--train_steps=40")
  assert sorted(line.split("]")[0] for line in output.splitlines()
                if line.endswith("steps_run=40")) == ["[worker:0", "[worker:1"]


@pytest.mark.parametrize("env,args,message", [
    ('{"cluster": {"chief": ["127.0.0.1:1"]', ["--strategy=multi_worker"],
     "error: TF_CONFIG is not valid JSON (Expecting ',' delimiter at character 37)"),
    ('{"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, '
     '"task": {"type": "chief", "index": 0}}', ["--strategy=parameter_server"],
     "error: strategy 'parameter_server' needs at least one 'ps' task"),
    (None, ["--strategy=spark"], "flag --strategy=spark: value should be one of <local|"),
])
def test_bad_input_ends_at_once_with_the_fix(env, args, message, tmp_path):
  extra = {"TF_CONFIG": env} if env else {}
  code, output = helpers.run([helpers.PYTHON, "-m", "model_zoo.mnist_cnn",
                               f"--model_dir={tmp_path}", *args],
                              timeout=60, env=helpers.child_env(**extra))
  assert code != 0
  assert message in output
  assert "Traceback" not in output
