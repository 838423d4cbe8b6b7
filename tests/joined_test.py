"""The record by which a task tells the launcher it joined its job's strategy."""

import estimator_dist as ed
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
