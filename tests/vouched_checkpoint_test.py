"""A checkpoint remembered complete holds only while its files and the index are as they
were and nothing newer came (the real saves and resumes: trust_test's truncated
checkpoint, sweep_test's PBT population); PBT's copy of a checkpoint stays remembered
only when its source was."""

import os
import shutil

import numpy as np
import pytest

from estimator_dist.contract import vouched_checkpoint
from estimator_dist.experiments import pbt


def _save(model_dir, step, *, kinds=("index", "meta", "data-00000-of-00001"), named=None):
  for kind in kinds:
    (model_dir / f"model.ckpt-{step}.{kind}").write_bytes(b"x" * (step + 10))
  named = named or f"model.ckpt-{step}"
  (model_dir / "checkpoint").write_text(
      f'model_checkpoint_path: "{named}"\nall_model_checkpoint_paths: "{named}"\n')


@pytest.fixture
def remembered(tmp_path):
  _save(tmp_path, 10)
  _save(tmp_path, 20)
  vouched_checkpoint.remember(str(tmp_path), step=20)
  assert vouched_checkpoint.holds(str(tmp_path)) == str(tmp_path / "model.ckpt-20")
  return tmp_path


@pytest.mark.parametrize("change", [
    "truncated data", "rewritten index file", "another index", "newer checkpoint",
    "removed graph", "new shard", "replaced by a copy"])
def test_a_remembered_checkpoint_no_longer_holds_once_anything_of_it_changed(
    remembered, change):
  data = remembered / "model.ckpt-20.data-00000-of-00001"
  if change == "truncated data":
    data.write_bytes(data.read_bytes()[:5])
  elif change == "rewritten index file":  # Same size and bytes, written again.
    os.utime(remembered / "model.ckpt-20.index", ns=(0, 0))
  elif change == "another index":
    (remembered / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-10"\n')
  elif change == "newer checkpoint":  # Even one that lacks its data: it is read.
    (remembered / "model.ckpt-30.index").write_bytes(b"x")
  elif change == "removed graph":
    (remembered / "model.ckpt-20.meta").unlink()
  elif change == "new shard":
    (remembered / "model.ckpt-20.data-00001-of-00002").write_bytes(b"x")
  elif change == "replaced by a copy":  # The same bytes and times, another file.
    copy = remembered / "copy"
    shutil.copy2(data, copy)
    os.replace(copy, data)
  assert vouched_checkpoint.holds(str(remembered)) is None


def test_an_older_checkpoint_removed_leaves_the_remembered_one_holding(remembered):
  for name in os.listdir(remembered):
    if name.startswith("model.ckpt-10."):
      os.remove(remembered / name)  # What keep_checkpoint_max does.
  assert vouched_checkpoint.holds(str(remembered)) == str(remembered / "model.ckpt-20")


@pytest.mark.parametrize("incomplete", [
    "no graph", "no data", "a shard missing", "index names another", "index names another "
    "directory's", "index names a subdirectory's"])
def test_an_incomplete_checkpoint_or_one_the_index_does_not_name_is_not_remembered(
    tmp_path, incomplete):
  kinds = {"no graph": ("index", "data-00000-of-00001"), "no data": ("index", "meta"),
           "a shard missing": ("index", "meta", "data-00000-of-00002")}
  named = {"index names another": "model.ckpt-10",
           "index names another directory's": "/elsewhere/model.ckpt-20",
           "index names a subdirectory's": "sub/model.ckpt-20"}.get(incomplete)
  _save(tmp_path, 20, named=named,
        **({"kinds": kinds[incomplete]} if incomplete in kinds else {}))
  vouched_checkpoint.remember(str(tmp_path), step=np.int64(20))  # As a saver gives it.
  assert vouched_checkpoint.holds(str(tmp_path)) is None


def test_the_index_may_name_it_by_its_path_in_the_model_dir(tmp_path):
  _save(tmp_path, 20, kinds=("index", "meta", "data-00000-of-00002", "data-00001-of-00002"),
        named=str(tmp_path / "model.ckpt-20"))
  vouched_checkpoint.remember(str(tmp_path), step=np.int64(20))
  assert vouched_checkpoint.holds(str(tmp_path)) == str(tmp_path / "model.ckpt-20")


def test_a_record_of_another_boot_of_the_machine_holds_nothing(remembered):
  record = remembered / vouched_checkpoint.FILE_NAME
  record.write_text(record.read_text().replace('"boot": "', '"boot": "another-'))
  assert vouched_checkpoint.holds(str(remembered)) is None


@pytest.mark.parametrize("source", ["remembered", "not remembered", "changed since"])
def test_pbts_copy_is_remembered_only_when_its_source_was(tmp_path, source):
  source_dir, target_dir = tmp_path / "member_0", tmp_path / "member_1"
  source_dir.mkdir()
  target_dir.mkdir()
  _save(source_dir, 20)
  _save(target_dir, 20)  # Its own, replaced.
  vouched_checkpoint.remember(str(target_dir), step=20)
  if source != "not remembered":
    vouched_checkpoint.remember(str(source_dir), step=20)
  if source == "changed since":
    (source_dir / "model.ckpt-20.data-00000-of-00001").write_bytes(b"y" * 30)
  assert pbt._exploit(str(source_dir), str(target_dir)) == "model.ckpt-20"
  expected = str(target_dir / "model.ckpt-20") if source == "remembered" else None
  assert vouched_checkpoint.holds(str(target_dir)) == expected


def test_nothing_remembered_or_a_damaged_record_holds_nothing(tmp_path):
  _save(tmp_path, 20)
  assert vouched_checkpoint.holds(str(tmp_path)) is None
  assert vouched_checkpoint.holds(str(tmp_path / "absent")) is None
  vouched_checkpoint.remember(str(tmp_path), step=20)
  (tmp_path / vouched_checkpoint.FILE_NAME).write_text("{not json")
  assert vouched_checkpoint.holds(str(tmp_path)) is None
