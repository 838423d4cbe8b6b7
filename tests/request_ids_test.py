"""TensorFlow's request ids do not repeat in a job's processes (contract/preload.py)."""

import pytest

from estimator_dist.contract import preload
from tests import helpers

# TensorFlow 2.15's own ids repeat after about 77,000 steps of a gRPC session (a 32-bit
# birthday): measured, it stopped after 24,000 to 85,000. 200,000 steps pass without the
# library about three times in a hundred runs (e^-3.5).
STEPS = 200_000

PROGRAM = f"""
import tensorflow as tf
from estimator_dist.contract import preload
tf.compat.v1.disable_eager_execution()
server = tf.distribute.Server.create_local_server()
value = tf.compat.v1.placeholder(tf.float32, [])
with tf.compat.v1.Session(server.target) as session:
  step = session.make_callable(value + 1, [value])
  for i in range({STEPS}):
    step(i)
print("preloaded:", preload.loaded())
"""


@pytest.mark.processes
def test_a_grpc_session_with_the_preload_library_never_repeats_a_request_id():
  """Each step of a session on a TensorFlow server runs on a thread of the master's own,
  whose request id TensorFlow draws from 32 bits: its worker then refuses a step as "The
  same RunGraph (Worker) request was received twice". With the library every task of a
  job has, 200,000 steps run."""
  env = preload.preloaded(helpers.child_env())
  assert env is not None, "the preload library cannot be built here (no C compiler)"
  code, output = helpers.run([helpers.PYTHON, "-c", PROGRAM], env=env, timeout=600)
  assert code == 0, output[-3000:]
  assert "preloaded: True" in output, output[-3000:]
