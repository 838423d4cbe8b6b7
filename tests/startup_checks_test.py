"""The start-up checks in this process (`jobs/startup_checks.py`, `outputs/model_dir_check.py`);
trust_test runs the launcher's refusals for real, on read-only and full file systems."""

import os
import sys
import tempfile

import pytest

from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import launcher
from estimator_dist.jobs import spec
from estimator_dist.jobs import startup_checks
from estimator_dist.outputs import model_dir_check


def test_a_new_model_dir_is_made_and_left_empty(tmp_path):
  model_dir = tmp_path / "a" / "b"
  model_dir_check.check(str(model_dir))
  assert model_dir.is_dir() and not os.listdir(model_dir)
  model_dir_check.check("gs://bucket/model")  # Not a local path: not checked.


def test_too_little_free_space_names_what_is_free_and_the_fix(tmp_path, monkeypatch):
  monkeypatch.setattr(model_dir_check, "MIN_FREE_BYTES", 2**62)
  with pytest.raises(errors.ConfigError, match=(
      rf"^--model_dir={tmp_path} has \d+ MB free on its file system, below the \d+ MB a job "
      rf"needs for its checkpoints: free space there or give a directory on another disk\.$")):
    model_dir_check.check(str(tmp_path))


def test_without_a_model_dir_the_temporary_directory_is_checked(tmp_path, monkeypatch):
  a_file = tmp_path / "a_file"
  a_file.write_text("")
  monkeypatch.setattr(tempfile, "tempdir", str(a_file))
  job = spec.JobSpec(strategy="multi_worker", command=["python", "train.py"])
  with pytest.raises(errors.ConfigError) as raised:
    startup_checks.check_job(job, None, local=True)
  assert str(raised.value) == (
      f"the temporary directory {a_file} (where a job without --model_dir trains) is a file, "
      f"not a directory: give --model_dir a directory you can write.")


@pytest.fixture
def no_compiler(tmp_path, monkeypatch):
  """No C compiler on PATH and an empty cache: the preload library cannot be built."""
  (tmp_path / "bin").mkdir()
  monkeypatch.setenv("PATH", str(tmp_path / "bin"))
  monkeypatch.setenv(env_vars.CACHE, str(tmp_path / "cache"))
  monkeypatch.delenv("CC", raising=False)


def test_auto_on_the_host_network_without_the_library_is_refused_too(no_compiler):
  options = launch_options.LaunchOptions(isolation="auto")
  assert startup_checks.exposure(options, on_host_network=False) is None
  with pytest.raises(errors.ConfigError, match=(
      r"^--isolation=auto: this machine cannot give the job its own namespaces \(unshare: "
      r"no\), and the library that keeps the job's servers on loopback cannot be built "
      r"\(there is no C compiler \(install gcc\)\), so they would listen on every interface, "
      r".* or pass --allow_every_interface to accept that the servers listen on every "
      r"interface\.$")):
    startup_checks.exposure(options, on_host_network=True, why_no_namespace="unshare: no")
  allowed = launch_options.LaunchOptions(isolation="auto", allow_every_interface=True)
  assert startup_checks.exposure(allowed, on_host_network=True).startswith(
      "--allow_every_interface: the library that keeps the job's servers on loopback cannot "
      "be built (there is no C compiler (install gcc)), so they listen on every interface")


def test_a_python_of_another_environment_is_named(tmp_path, monkeypatch):
  other = tmp_path / "bin" / "python3"
  other.parent.mkdir()
  other.write_text("#!/bin/sh\n")
  other.chmod(0o755)
  monkeypatch.setenv("PATH", f"{other.parent}{os.pathsep}{os.environ['PATH']}")
  assert startup_checks.interpreter_note(["python3", "train.py"]) == (
      f"the program runs under {other} (python3 on PATH), not the launcher's "
      f"{sys.executable}")
  ours = os.path.join(os.path.dirname(sys.executable), "python3")
  assert startup_checks.interpreter_note([ours, "train.py"]) is None
  assert startup_checks.interpreter_note(["bash", "train.sh"]) is None
