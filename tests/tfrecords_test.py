"""Event files read as TensorFlow frames them, without TensorFlow."""

import subprocess
import sys

import pytest
import tensorflow as tf

from estimator_dist.outputs import tfrecords
from tests import helpers


def test_crc32c_is_castagnolis():
  assert tfrecords.crc32c(b"123456789") == 0xE3069283  # The check value of CRC-32C.
  assert tfrecords.crc32c(b"") == 0


def test_records_are_tensorflows_both_ways(tmp_path):
  path = str(tmp_path / "records")
  with tf.io.TFRecordWriter(path) as writer:
    for data in (b"", b"a", b"x" * 100000):
      writer.write(data)
  assert list(tfrecords.records(path)) == [b"", b"a", b"x" * 100000]
  ours = tmp_path / "ours"
  ours.write_bytes(b"".join(tfrecords.record(data) for data in (b"b", b"y" * 1000)))
  assert [r.numpy() for r in tf.data.TFRecordDataset(str(ours))] == [b"b", b"y" * 1000]


@pytest.mark.parametrize("cut", ["length", "data", "crc"])
def test_a_record_not_whole_or_damaged_ends_the_file_for_now(tmp_path, cut):
  whole, last = tfrecords.record(b"first"), bytearray(tfrecords.record(b"second"))
  if cut == "crc":
    last[14] ^= 1  # A byte of the data: its CRC no longer matches.
  else:
    last = last[:6] if cut == "length" else last[:-5]
  (tmp_path / "records").write_bytes(whole + bytes(last))
  assert list(tfrecords.records(str(tmp_path / "records"))) == [b"first"]


@pytest.mark.processes
def test_reading_evaluations_imports_no_tensorflow(tmp_path):
  """What the launcher and the sweep runner do while a job runs."""
  eval_dir = tmp_path / "eval"
  with tf.Graph().as_default(), tf.compat.v1.summary.FileWriter(str(eval_dir)) as writer:
    writer.add_summary(tf.compat.v1.Summary(value=[
        tf.compat.v1.Summary.Value(tag="accuracy", simple_value=0.5)]), 100)
  done = subprocess.run(
      [helpers.PYTHON, "-c", "import sys; from estimator_dist.outputs import event_files; "
       f"print(event_files.eval_metrics({str(tmp_path)!r}), 'tensorflow' in sys.modules)"],
      capture_output=True, text=True, env=helpers.child_env(), timeout=60, check=False)
  assert done.stdout == "{100: {'accuracy': 0.5}} False\n", done.stderr
