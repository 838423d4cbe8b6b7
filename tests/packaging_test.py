"""The package installs beside a user's own TensorFlow and names what is missing; its
wheel holds only estimator_dist; slurm, k8s and --help need no TensorFlow."""

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from estimator_dist import extras
from tests import helpers

# Made by `make setup` (scripts/setup_env.sh): a clean environment holding tensorflow
# 2.15.1, the GPU-capable distribution, as a user's does; baseline.txt lists its packages.
USER_VENV = os.path.join(
    os.environ.get("ESTIMATOR_DIST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "estimator_dist"),
    "venv-tensorflow-2.15.1")
# A one-worker job of the installed package, on data of its own (no scikit-learn there).
PROGRAM = """
import numpy as np
import tensorflow as tf
import estimator_dist as ed

def model_fn(features, labels, mode, params):
  logits = tf.compat.v1.layers.dense(features, 2)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

def input_fn():
  x = np.random.RandomState(0).rand(64, 4).astype(np.float32)
  return tf.data.Dataset.from_tensor_slices((x, (x[:, 0] > 0.5).astype(np.int32))).batch(16)

def main(_):
  ed.train_and_evaluate(model_fn, input_fn, input_fn, options=ed.options_from_flags())

ed.define_flags(train_steps=20)
ed.run_program(main)
"""


def user_env():
  env = helpers.child_env()
  del env["PYTHONPATH"]  # Only what is installed in the user's environment.
  env["PATH"] = os.path.join(USER_VENV, "bin") + os.pathsep + env["PATH"]
  return env


def pip(*args, check=True):
  done = subprocess.run([os.path.join(USER_VENV, "bin", "python"), "-m", "pip", *args],
                        capture_output=True, text=True, env=user_env(), check=False)
  assert done.returncode == 0 or not check, done.stdout + done.stderr
  return done.stdout


def back_to_baseline():
  """Uninstalls what is not in the environment's baseline list."""
  with open(os.path.join(USER_VENV, "baseline.txt")) as f:
    baseline = {line.split("==")[0].lower() for line in f if line.strip()}
  added = [line.split("==")[0] for line in pip("freeze").splitlines()
           if line.strip() and line.split("==")[0].split(" @ ")[0].lower() not in baseline]
  if added:
    pip("uninstall", "-y", *[name.split(" @ ")[0] for name in added])


def version():
  """The version pyproject.toml gives, the one place it is written."""
  with open(os.path.join(helpers.REPO, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)["project"]["version"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
  """The wheel of this checkout, built once for this file's tests (which share a process
  of the suite: xdist_group "wheel")."""
  wheel_dir, source = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
  for name in ("pyproject.toml", "README.md", "estimator_dist"):
    copy = shutil.copytree if os.path.isdir(os.path.join(helpers.REPO, name)) else shutil.copy
    copy(os.path.join(helpers.REPO, name), source / name,
         **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree
            else {}))
  # Built from a copy: setuptools leaves build/ and *.egg-info where it builds.
  subprocess.run([helpers.PYTHON, "-m", "pip", "wheel", "--quiet", "--no-deps",
                  "--no-build-isolation", "-w", str(wheel_dir), str(source)], check=True)
  built, = wheel_dir.glob("estimator_dist-*.whl")
  return built


@pytest.mark.processes
@pytest.mark.xdist_group("wheel")
def test_the_wheel_installs_only_estimator_dist(wheel):
  """No top-level model_zoo or benchmarks to shadow a user's own: they run from a
  checkout."""
  with zipfile.ZipFile(wheel) as built:
    names = built.namelist()
  assert {name.split("/")[0] for name in names} == {
      "estimator_dist", f"estimator_dist-{version()}.dist-info"}, sorted(names)
  for data in ("contract/native/bind_address.c", "contract/native/request_ids.c",
               "instrument/site/sitecustomize.py"):
    assert f"estimator_dist/{data}" in names, sorted(names)


@pytest.mark.processes
@pytest.mark.xdist_group("wheel")
def test_the_wheel_installs_beside_the_users_tensorflow_and_trains(wheel, tmp_path):
  assert os.path.exists(os.path.join(USER_VENV, "baseline.txt")), (
      f"{USER_VENV} is missing: `make setup` makes it")
  back_to_baseline()  # Also after a run of this test that failed half-way.
  try:
    pip("install", "--quiet", str(wheel))
    installed = pip("list")
    assert "tensorflow-cpu" not in installed and "tensorflow " in installed, installed
    assert "optuna" not in installed and "matplotlib" not in installed, installed
    assert "No broken requirements found" in pip("check"), installed
    cli = subprocess.run(["estimator-dist", "--help"], capture_output=True, text=True,
                         env=user_env(), cwd=tmp_path, check=False)
    assert cli.returncode == 0 and "launch" in cli.stdout, cli.stdout + cli.stderr
    sweep = subprocess.run(["estimator-dist", "sweep", "--help"], capture_output=True,
                           text=True, env=user_env(), cwd=tmp_path, check=False)
    assert sweep.returncode == 2, sweep.stdout + sweep.stderr
    assert sweep.stderr.strip() == ("estimator-dist sweep: error: this command needs optuna, "
                                    "which estimator_dist[sweep] installs: pip install "
                                    "'estimator_dist[sweep]'."), sweep.stderr
    (tmp_path / "train.py").write_text(PROGRAM)
    job = subprocess.run(["estimator-dist", "launch", "--strategy=local", "--num_workers=1",
                          "--", "python", "train.py", f"--model_dir={tmp_path / 'model'}"],
                         capture_output=True, text=True, env=user_env(), cwd=tmp_path,
                         check=False, timeout=300)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "steps          20" in job.stdout, job.stdout[-3000:]
  finally:
    back_to_baseline()


# What `estimator-dist slurm`, `k8s` and `launch --help` import beside the standard library
# and the package (psutil: the launcher's process supervision).
SLURM_AND_K8S_NEED = ("absl-py", "psutil", "pyyaml")


@pytest.mark.processes
@pytest.mark.xdist_group("wheel")
def test_slurm_k8s_and_help_run_without_tensorflow(wheel, tmp_path):
  """A login node: a fresh environment with the wheel (--no-deps: its core requires
  tensorflow-estimator and numpy) and only what slurm and k8s import. The suite's pip
  installs into it (--python), from pip's cache."""
  venv = tmp_path / "venv"
  subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)],  # pylint: disable=protected-access
                 check=True)
  python = str(venv / "bin" / "python")
  pins = [f"{name}=={importlib.metadata.version(name)}" for name in SLURM_AND_K8S_NEED]
  subprocess.run([helpers.PYTHON, "-m", "pip", "--python", python, "install", "--quiet",
                  "--no-deps", str(wheel), *pins], check=True, capture_output=True)
  env = {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}

  def run(*args):
    done = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60, check=False)
    return done.returncode, done.stdout, done.stderr

  assert run(python, "-c", "import tensorflow")[0] == 1
  program = ["--", "python", "train.py", "--model_dir=/shared/run"]
  code, script, err = run("estimator-dist", "slurm", "--strategy=multi_worker",
                          "--num_workers=2", "--nodes=2", *program)
  assert code == 0 and script.startswith("#!/bin/bash\n"), err
  assert "#SBATCH --nodes=2" in script and "srun" in script and "train.py" in script, script
  code, manifest, err = run("estimator-dist", "k8s", "--strategy=multi_worker",
                            "--num_workers=2", "--image=registry/train:1", *program)
  assert code == 0 and "kind: JobSet" in manifest and "registry/train:1" in manifest, err
  # Not sweep, whose --help needs Optuna.
  for command in ("launch", "slurm", "k8s", "progress", "verify", "bench"):
    code, out, err = run("estimator-dist", command, "--help")
    flag = {"progress": "--mailbox", "bench": "--window_secs"}.get(command, "--strategy")
    assert code == 0 and f"\n  {flag}:" in out, (command, out, err)
  code, out, err = run("estimator-dist", "verify", "--module=model_zoo.mnist_dnn")
  assert code == 2 and err.startswith(
      "estimator-dist verify: error: this command needs TensorFlow 2.15 and "
      "tensorflow-estimator 2.15 (found TensorFlow missing, tensorflow-estimator missing): "
      "pip install 'estimator_dist[cpu]'"), err
  assert run("estimator-dist", "bench", "--steps=50")[2].startswith(
      "estimator-dist bench: error: bench without a program runs model_zoo's benchmark")
  assert run("estimator-dist", "--version")[1] == f"estimator-dist {version()}\n"
  code, out, err = run(python, "-c", "import estimator_dist as ed; print(ed.__version__); "
                       "ed.train_and_evaluate")
  assert code == 1 and out == f"{version()}\n", err
  assert err.splitlines()[-1].startswith(
      "estimator_dist.extras.MissingExtra: estimator_dist needs TensorFlow 2.15"), err


def test_without_tensorflow_a_name_of_the_package_names_the_extras():
  """`import estimator_dist` works (the commands need no TensorFlow); its first name used
  says what to install."""
  done = subprocess.run([sys._base_executable, "-S", "-c",  # pylint: disable=protected-access
                         "import estimator_dist as ed; ed.train_and_evaluate"],
                        capture_output=True, text=True, cwd=helpers.REPO, check=False,
                        env={"PATH": os.environ["PATH"], "PYTHONPATH": helpers.REPO})
  assert done.returncode == 1
  assert done.stderr.splitlines()[-1] == (
      "estimator_dist.extras.MissingExtra: estimator_dist needs TensorFlow 2.15 and "
      "tensorflow-estimator 2.15 (found TensorFlow missing, tensorflow-estimator missing): "
      "pip install 'estimator_dist[cpu]' (tensorflow-cpu) or 'estimator_dist[gpu]' "
      "(tensorflow[and-cuda]), or install TensorFlow 2.15 your own way."), done.stderr


def test_a_missing_module_of_an_extra_names_the_extra():
  missing = extras.missing_extra(ModuleNotFoundError(name="optuna.samplers"), "a sweep")
  assert str(missing) == ("a sweep needs optuna, which estimator_dist[sweep] installs: "
                          "pip install 'estimator_dist[sweep]'.")
  assert extras.missing_extra(ModuleNotFoundError(name="tensorflow"), "a sweep") is None
