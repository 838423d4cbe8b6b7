"""The records by which a task tells the launcher it joined its job's strategy, and where
the chief trains."""

import estimator_dist as ed
from estimator_dist.contract import chief_model_dir
from estimator_dist.contract import env_vars
from estimator_dist.contract import joined


def test_a_task_that_joined_is_told_apart_from_one_that_did_not(tmp_path):
  env = {env_vars.JOB_DIR: str(tmp_path)}
  joined.write(ed.TaskInfo("chief", 0, 0, 3), strategy="multi_worker", env=env)
  joined.write(ed.TaskInfo("worker", 0, 1, 3), strategy="horovod", env=env)
  (tmp_path / "joined" / "worker:1").write_text("not json")
  assert joined.not_joined(str(tmp_path), {"chief:0", "worker:0", "worker:1", "ps:0"},
                           strategy="multi_worker") == {
      "ps:0": "never started the job's strategy",
      "worker:0": "started horovod, not the job's multi_worker",
      "worker:1": "never started the job's strategy"}
  assert sorted(p.name for p in (tmp_path / "joined").iterdir()) == [
      "chief:0", "worker:0", "worker:1"]


def test_without_the_launchers_directory_nothing_is_written(tmp_path):
  joined.write(ed.TaskInfo("chief", 0, 0, 1), strategy="local", env={})
  gone = {env_vars.JOB_DIR: str(tmp_path / "gone")}
  joined.write(ed.TaskInfo("chief", 0, 0, 1), strategy="local", env=gone)
  assert not list(tmp_path.iterdir())


def test_the_launcher_learns_the_chiefs_model_dir_from_the_jobs_directory(tmp_path):
  assert chief_model_dir.read(str(tmp_path)) is None and chief_model_dir.read(None) is None
  chief_model_dir.write("/their/own", env={env_vars.JOB_DIR: str(tmp_path)})
  assert chief_model_dir.read(str(tmp_path)) == "/their/own"
  chief_model_dir.write("/elsewhere", env={})  # Not under a launcher: nothing written.
  assert chief_model_dir.read(str(tmp_path)) == "/their/own"
