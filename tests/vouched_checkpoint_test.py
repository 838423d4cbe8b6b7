"""A checkpoint remembered complete holds only while its files and the index are as they
were and nothing newer came (the real saves and resumes: trust_test's truncated
checkpoint, pbt_test's copies)."""

import os
import shutil

import pytest

from estimator_dist.contract import vouched_checkpoint


def _save(model_dir, step, *, kinds=("index", "meta", "data-00000-of-00001")):
  for kind in kinds:
    (model_dir / f"model.ckpt-{step}.{kind}").write_bytes(b"x" * (step + 10))
  (model_dir / "checkpoint").write_text(
      f'model_checkpoint_path: "model.ckpt-{step}"\n'
      f'all_model_checkpoint_paths: "model.ckpt-{step}"\n')


@pytest.fixture
def remembered(tmp_path):
  _save(tmp_path, 10)
  _save(tmp_path, 20)
  vouched_checkpoint.remember(str(tmp_path), 20)
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


@pytest.mark.parametrize("incomplete", ["no graph", "no data", "index names another"])
def test_an_incomplete_checkpoint_is_not_remembered(tmp_path, incomplete):
  kinds = {"no graph": ("index", "data-00000-of-00001"), "no data": ("index", "meta")}
  _save(tmp_path, 20, **({"kinds": kinds[incomplete]} if incomplete in kinds else {}))
  if incomplete == "index names another":
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-10"\n')
  vouched_checkpoint.remember(str(tmp_path), 20)
  assert vouched_checkpoint.holds(str(tmp_path)) is None


def test_nothing_remembered_or_a_damaged_record_holds_nothing(tmp_path):
  _save(tmp_path, 20)
  assert vouched_checkpoint.holds(str(tmp_path)) is None
  assert vouched_checkpoint.holds(str(tmp_path / "absent")) is None
  vouched_checkpoint.remember(str(tmp_path), 20)
  (tmp_path / vouched_checkpoint.FILE_NAME).write_text("{not json")
  assert vouched_checkpoint.holds(str(tmp_path)) is None
