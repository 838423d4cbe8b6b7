"""The `estimator-dist` command as a user meets it: each command's --help lists its flags,
the top level lists the commands, --version says the installed version."""

import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

import estimator_dist as ed
from estimator_dist import cli
from tests import helpers

SCRIPT = os.path.join(os.path.dirname(sys.executable), "estimator-dist")
# The main flags of each command, which its --help must list.
MAIN_FLAGS = {
    "launch": ("strategy", "num_workers", "model_dir", "instrument", "evaluator", "hosts"),
    "slurm": ("strategy", "num_workers", "nodes", "time", "partition", "requeue"),
    "k8s": ("strategy", "num_workers", "image", "namespace", "gpus"),
    "progress": ("model_dir", "mailbox", "progress_secs"),
    "sweep": ("space", "trials", "parallel", "sampler", "pruner", "metric", "sweep_dir"),
    "verify": ("module", "strategy", "num_workers", "tolerance", "train_steps"),
    "bench": ("strategies", "num_workers", "warmup_steps", "window_secs", "output_dir"),
}


def test_every_command_has_its_main_flags_here():
  assert set(MAIN_FLAGS) == set(cli._COMMANDS)  # pylint: disable=protected-access


@pytest.mark.processes
@pytest.mark.parametrize("command", sorted(MAIN_FLAGS))
def test_a_commands_help_lists_its_flags_and_exits_0(command, tmp_path):
  """Through the console script, away from the checkout."""
  done = subprocess.run([SCRIPT, command, "--help"], capture_output=True, text=True,
                        env=helpers.child_env(), cwd=tmp_path, timeout=120, check=False)
  assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
  listed = set(re.findall(r"^  --(?:\[no\])?(\w+):", done.stdout, re.MULTILINE))
  assert set(MAIN_FLAGS[command]) <= listed, (sorted(listed), done.stdout[-2000:])
  assert "verbosity" not in listed  # absl's own flags stay in --helpfull.
  assert not {"train_only", "join_batches"} & listed  # Internal: verify's to its tasks.


@pytest.mark.processes
def test_a_programs_help_lists_the_training_flags_it_was_given():
  """`python quickstart.py --help` once listed none of ed.define_flags()'s flags (they were
  221 lines of --helpfull, between absl.testing's and TPU tensor_tracer's)."""
  done = subprocess.run([helpers.PYTHON, "-m", "model_zoo.mnist_cnn", "--help"],
                        capture_output=True, text=True, env=helpers.child_env(), timeout=120,
                        check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  listed = set(re.findall(r"^  --(?:\[no\])?(\w+):", done.stdout, re.MULTILINE))
  assert {"strategy", "train_steps", "model_dir", "batch_size"} <= listed, done.stdout[-2000:]
  assert "verbosity" not in listed and "estimator_dist_training_flags" not in listed, listed


def test_the_top_level_help_lists_every_command_and_exits_0(capsys):
  assert cli.main(["estimator-dist", "--help"]) == 0
  out = capsys.readouterr().out
  assert out.startswith("usage: estimator-dist COMMAND")
  for command in cli._COMMANDS:  # pylint: disable=protected-access
    assert re.search(rf"^  {command} +\w", out, re.MULTILINE), out


@pytest.mark.processes
def test_a_commands_h_is_its_help_and_a_programs_h_is_the_programs():
  done = subprocess.run([SCRIPT, "launch", "-h"], capture_output=True, text=True,
                        env=helpers.child_env(), timeout=120, check=False)
  assert done.returncode == 0 and "\n  --strategy:" in done.stdout, done.stderr[-2000:]
  assert cli._with_long_help(["-h", "--", "python", "t.py", "-h"]) == [  # pylint: disable=protected-access
      "--help", "--", "python", "t.py", "-h"]


@pytest.mark.parametrize("args, said", [
    ((), "error: flag --mailbox=None: Flag --mailbox must have a value other than None."),
    (("--mailbox=/no/such/mailbox",), "error: --mailbox=/no/such/mailbox is not a directory")])
def test_progress_without_a_mailbox_is_one_line_and_exit_2(args, said):
  done = subprocess.run([SCRIPT, "progress", *args], capture_output=True, text=True,
                        timeout=60)
  assert done.returncode == 2 and done.stderr.startswith(
      f"estimator-dist progress: {said}"), done
  assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 2, done


def test_an_unknown_command_is_named_with_the_nearest_and_the_list(capsys):
  assert cli.main(["estimator-dist", "lunch", "--strategy=local"]) == 2
  err = capsys.readouterr().err
  assert err.startswith("estimator-dist: error: unknown command 'lunch'; did you mean "
                        "'launch'? The commands: launch, k8s, slurm, "), err
  assert "usage: estimator-dist COMMAND" in err


def test_without_a_command_the_usage_goes_to_stderr_and_exits_2(capsys):
  assert cli.main(["estimator-dist"]) == 2
  assert capsys.readouterr().err.startswith("usage: estimator-dist COMMAND")


def test_the_version_is_the_installed_distributions(capsys):
  installed = importlib.metadata.version("estimator_dist")
  assert ed.__version__ == installed
  assert cli.main(["estimator-dist", "--version"]) == 0
  assert capsys.readouterr().out == f"estimator-dist {installed}\n"


# A login node: TensorFlow, its Estimator, Horovod and NumPy are not installed (the
# wheel's environment of packaging_test has none of them). A None in sys.modules makes
# their import fail and find_spec (extras' check) say they are missing; set by a
# sitecustomize, it holds in every Python a command starts, also the benchmark that bench
# runs in its place.
NOT_INSTALLED = ("tensorflow", "tensorflow_estimator", "horovod", "numpy")


def run_without_tensorflow(tmp_path, *args, cwd=helpers.REPO):
  (tmp_path / "sitecustomize.py").write_text(
      f"import sys\nsys.modules.update(dict.fromkeys({NOT_INSTALLED!r}))\n")
  env = helpers.child_env(PYTHONPATH=os.pathsep.join([str(tmp_path), helpers.REPO]))
  return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                        cwd=cwd, timeout=120, check=False)


def listed_flags(help_text):
  return set(re.findall(r"^  --(?:\[no\])?(\w+):", help_text, re.MULTILINE))


def test_verify_lists_its_flags_without_tensorflow_and_a_run_says_what_to_install(tmp_path):
  done = run_without_tensorflow(tmp_path, "-c", "\n".join([
      "import sys",
      "from absl import flags",
      "from estimator_dist import cli",
      "from estimator_dist.verification import verify",
      "from estimator_dist.training import flags as training_flags",
      "training_flags.define_flags(flags.FlagValues())",
      "verify.define_flags(flags.FlagValues())",
      "sys.exit(cli.main(['estimator-dist', 'verify', '--help']))"]))
  assert done.returncode == 0, done.stderr[-3000:]
  assert set(MAIN_FLAGS["verify"]) <= listed_flags(done.stdout), done.stdout[-2000:]
  done = run_without_tensorflow(tmp_path, "-m", "estimator_dist.cli", "verify",
                                "--module=model_zoo.mnist_dnn")
  assert done.returncode == 2 and done.stderr.startswith(
      "estimator-dist verify: error: this command needs TensorFlow 2.15"), done.stderr[-3000:]


def test_bench_lists_its_flags_without_tensorflow_and_a_run_says_what_to_install(tmp_path):
  done = run_without_tensorflow(tmp_path, "-m", "estimator_dist.cli", "bench", "--help")
  assert done.returncode == 0, done.stderr[-3000:]
  assert set(MAIN_FLAGS["bench"]) <= listed_flags(done.stdout), done.stdout[-2000:]
  done = run_without_tensorflow(tmp_path, "-m", "estimator_dist.cli", "bench", "--steps=50")
  assert done.returncode == 2 and done.stderr.startswith(
      "estimator-dist bench: error: this command needs TensorFlow 2.15"), done.stderr[-3000:]


@pytest.mark.parametrize("args,asked", [
    (["--help"], True), (["-?"], True), (["--helpfull"], True), (["-helpshort"], True),
    (["--strategy=horovod", "--", "python", "train.py", "--help"], False),
    (["--module=model_zoo.mnist_dnn"], False)])
def test_only_a_help_flag_before_the_programs_arguments_asks_for_the_flags(args, asked):
  assert cli._asks_help(args) is asked  # pylint: disable=protected-access
