"""What the launcher's terminal shows of a task's output (--terminal), read from lines a
multi_worker task of README's quickstart printed (TensorFlow 2.15.1), shortened."""

import pytest

from estimator_dist.supervision import shown_output

# A chief's output, as it came: TensorFlow's start-up, INFO records (one with a RunConfig
# dump, one with a ConfigProto), deprecation warnings, a failed auto-shard probe with the
# dataset's graph, Python warnings, the toolkit's lines, the program's own, a traceback.
OUTPUT = """\
2026-11-29 12:03:13.439458: I tensorflow/core/util/port.cc:113] oneDNN custom operations are on. You may see slightly different numerical results.
2026-11-29 12:03:13.520116: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is optimized to use available CPU instructions.
To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.
I1129 12:03:15.744187 139739399905856 placement.py:58] estimator-dist: training process 0 of 2 on this host runs on CPUs [0]
2026-11-29 12:03:15.753415: I tensorflow/core/distributed_runtime/rpc/grpc_server_lib.cc:457] Started server with target: grpc://127.0.0.1:35901
I1129 12:03:15.860775 139739399905856 estimator.py:200] Using config: {'_model_dir': '/tmp/m', '_session_config': allow_soft_placement: true
graph_options {
  rewrite_options {
    meta_optimizer_iterations: ONE
  }
}
, '_keep_checkpoint_max': 5, '_num_worker_replicas': 1}
W1129 12:03:10.243381 140579765813824 deprecation.py:50] From /work/run.py:102: EvalSpec.__new__ (from tensorflow_estimator.python.estimator.training) is deprecated and will be removed in a future version.
Instructions for updating:
Use tf.keras instead.
I1129 12:00:09.101 140 train.py:30] reading /data/train
2026-11-29 12:03:15.943866: E tensorflow/core/grappler/optimizers/meta_optimizer.cc:961] tf_auto_shard failed: NOT_FOUND: Found an unshardable source dataset: name: "TensorSliceDataset/_2"
op: "TensorSliceDataset"
attr {
  key: "_cardinality"
  value {
    i: 8000
  }
}

eval_result: {'accuracy': 0.9}
/work/.venv/lib/python3.11/site-packages/tensorflow/python/data/ops/dataset_ops.py:462: UserWarning: To make it possible to preserve tf.data options across serialization boundaries, ...
  warnings.warn("To make it possible to preserve tf.data options across "
/tmp/qs/quickstart.py:10: UserWarning: `tf.layers.dense` is deprecated and will be removed in a future version.
  logits = tf.compat.v1.layers.dense(hidden, 10)
I1129 12:03:16.454940 139739399905856 distribute_coordinator.py:247] Creating chief session creator with config: device_filters: "/job:chief/task:0"
allow_soft_placement: true
graph_options {
  rewrite_options {
    scoped_allocator_optimization: ON
  }
}

W1129 12:03:16.5 139739399905856 basic_session_run_hooks.py:724] It seems that global step has not been increased.
step 10 done
I1129 12:00:12.655539 140 estimator.py:2085] Saving dict for global step 200: accuracy = 0.897, global_step = 200, loss = 0.26
accuracy: 0.897
/tmp/qs/train.py:12: UserWarning: the learning rate is high
I1129 12:03:24.460385 140708430116544 coordinator.py:213] Error reported to Coordinator: in user code:

    File "/tmp/qs/broken.py", line 16, in model_fn
        optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rat"])

    KeyError: 'learning_rat'
Traceback (most recent call last):
  File "/tmp/qs/train.py", line 43, in <module>
    ed.run_program(main)
KeyError: 'learning_rat'
estimator-dist: summary: strategy=multi_worker workers=2 steps=200
""".splitlines()

OURS = ["estimator-dist: training process 0 of 2 on this host runs on CPUs [0]"]
WARNING = ["W1129 12:03:16.5 139739399905856 basic_session_run_hooks.py:724] It seems that "
           "global step has not been increased."]
PROGRAMS_WARNING = ["/tmp/qs/train.py:12: UserWarning: the learning rate is high"]
TRACEBACK = ["Traceback (most recent call last):",
             "  File \"/tmp/qs/train.py\", line 43, in <module>",
             "    ed.run_program(main)",
             "KeyError: 'learning_rat'",
             "estimator-dist: summary: strategy=multi_worker workers=2 steps=200"]


def shown(level, program="train.py"):
  lines = shown_output.Shown(level, program=program)
  return [text for text in map(lines, OUTPUT) if text is not None]


def test_the_default_shows_the_programs_and_the_toolkits_lines_and_no_tensorflow_chatter():
  assert shown("default") == [
      *OURS, "I1129 12:00:09.101 140 train.py:30] reading /data/train",
      "eval_result: {'accuracy': 0.9}", *WARNING, "step 10 done", "accuracy: 0.897",
      *PROGRAMS_WARNING, *TRACEBACK]


def test_the_program_is_known_by_its_main_file():
  assert "I1129 12:00:09.101 140 train.py:30] reading /data/train" not in shown(
      "default", program="other.py")


def test_quiet_shows_warnings_errors_tracebacks_and_the_toolkits_lines():
  assert shown("quiet") == [*OURS, *WARNING, *PROGRAMS_WARNING, *TRACEBACK]


def test_all_shows_every_line_as_it_came():
  assert shown("all") == OUTPUT


@pytest.mark.parametrize("level", ["default", "quiet"])
def test_a_record_of_every_level_but_info_shows(level):
  for line in ["E1129 12:00:09.1 140 session_manager.py:9] Could not restore: no checkpoint",
               "2026-11-29 12:03:15.9: E tensorflow/core/kernels/x.cc:1] Out of memory"]:
    assert shown_output.Shown(level)(line) == line


def test_the_logs_keep_every_line_and_say_where(tmp_path):
  logs = shown_output.TaskLogs(str(tmp_path / "logs"), level="default")
  for attempt in (1, 2):  # A restart appends.
    with logs.file_of("chief:0") as f:
      f.write(f"line {attempt}\n")
  started, first, again, second = (tmp_path / "logs" / "chief-0.log").read_text().splitlines()
  assert (first, second) == ("line 1", "line 2")
  assert started.startswith(f"{shown_output.STARTED} chief:0 at ") and again[:40] == started[:40]
  assert logs.note() is None
  logs.count_hidden()
  assert logs.note().startswith("the terminal left out 1 of the tasks' lines") and (
      logs.note().endswith(f"every line is in {tmp_path / 'logs'}"))
  nowhere = shown_output.TaskLogs(None, level="default")  # A model_dir of gs://, say.
  assert nowhere.file_of("chief:0") is None and nowhere.level == "all"
