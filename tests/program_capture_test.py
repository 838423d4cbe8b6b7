"""What `estimator-dist verify -- python PROGRAM` takes of a program: the Estimator and the
training input_fn of its first training call; and the one worker's joined batches."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import estimator_dist as ed
from estimator_dist.verification import program_capture
from tests import helpers

PROGRAM = '''
import subprocess
import sys
import tensorflow as tf

def input_fn():
  return tf.data.Dataset.from_tensor_slices(({"x": [[1.0], [2.0]]}, [0, 1])).batch(1)

print("argv", sys.argv[1:])
estimator = tf.estimator.LinearClassifier([tf.feature_column.numeric_column("x")],
                                          model_dir={model_dir!r})
try:
  {call}
except Exception:  # The program's own handler: the capture passes through it.
  pass
raise SystemExit("not reached")
'''


@pytest.mark.parametrize("call", [
    "estimator.train(input_fn, steps=5)",
    "tf.estimator.train_and_evaluate(estimator, tf.estimator.TrainSpec(input_fn, 5), "
    "tf.estimator.EvalSpec(input_fn))",
])
def test_the_first_training_call_gives_its_estimator_and_input_fn(tmp_path, capsys, call):
  program = tmp_path / "their_program.py"
  program.write_text(PROGRAM.replace("{call}", call).replace(
      "{model_dir!r}", repr(str(tmp_path / "model"))))
  argv = list(sys.argv)
  estimator, input_fn = program_capture.captured([sys.executable, str(program), "--flag=1"])
  assert isinstance(estimator, tf.estimator.LinearClassifier)
  assert input_fn.__name__ == "input_fn" and "argv ['--flag=1']" in capsys.readouterr().out
  assert sys.argv == argv and tf.estimator.Estimator.train.__name__ == "train"


def test_a_program_that_never_trains_or_is_not_python_is_refused(tmp_path):
  program = tmp_path / "no_training.py"
  program.write_text("print('hello')\n")
  with pytest.raises(ed.ConfigError, match="ended without training: verify takes"):
    program_capture.captured([sys.executable, str(program)])
  with pytest.raises(ed.ConfigError, match="verify runs a Python program"):
    program_capture.captured(["bash", "train.sh"])


def test_the_one_worker_joins_consecutive_batches_in_order():
  def input_fn(mode):
    del mode
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, np.arange(6))).batch(2)
  joined = program_capture.joined_batches(input_fn, 2)
  (features, labels), = list(joined(mode="train").take(1))
  assert features["x"].shape == (4, 2) and list(labels.numpy()) == [0, 1, 2, 3]
  assert len(list(joined(mode="train"))) == 1  # The 3rd batch has no partner: dropped.


ABSL_PROGRAM = '''
from absl import app, flags
import tensorflow as tf

flags.DEFINE_string("model_dir", "/tmp/theirs", "The program's own.")
flags.DEFINE_integer("train_steps", 7, "The program's own.")
FLAGS = flags.FLAGS

def input_fn():
  return tf.data.Dataset.from_tensor_slices(({"x": [[1.0], [2.0]]}, [0, 1])).batch(1)

def main(_):
  print("theirs", FLAGS.model_dir, FLAGS.train_steps, flush=True)
  estimator = tf.estimator.LinearClassifier([tf.feature_column.numeric_column("x")],
                                            model_dir=FLAGS.model_dir)
  estimator.train(input_fn, steps=FLAGS.train_steps)

app.run(main)
'''

CAPTURE = '''
import subprocess
import sys
from absl import flags
from estimator_dist.verification import program_capture
from estimator_dist.verification import verify
ours = verify.define_flags()
flags.FLAGS(["verify", "--model_dir=/tmp/ours", "--train_steps=3"])
estimator, _ = program_capture.captured(sys.argv[1:], our_flags=ours.names)
print("captured", estimator.model_dir, flush=True)
'''


@pytest.mark.processes
def test_a_programs_absl_flags_of_the_names_of_verifys_are_its_own(tmp_path):
  """TensorFlow's Keras-to-Estimator example and official models define --model_dir and
  --train_steps with absl, as verify does: once `DuplicateFlagError: The flag 'model_dir'
  is defined twice` before training; now the program defines and parses its own."""
  program = tmp_path / "their_absl_program.py"
  program.write_text(ABSL_PROGRAM)
  done = subprocess.run([sys.executable, "-c", CAPTURE, sys.executable, str(program),
                         f"--model_dir={tmp_path / 'model'}"], capture_output=True, text=True,
                        timeout=120, cwd=helpers.REPO, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  assert f"theirs {tmp_path / 'model'} 7\ncaptured {tmp_path / 'model'}\n" in done.stdout, done
