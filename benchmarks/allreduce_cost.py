"""Wall and CPU time of one Horovod all-reduce, per rank (what a training step pays).

  horovodrun -np 2 -H 127.0.0.1:2 --gloo python -m benchmarks.allreduce_cost
  horovodrun -np 2 -H 127.0.0.1:2 --mpi python -m benchmarks.allreduce_cost

The default size is the gradient of model_zoo's CNN (3.3 million floats). Horovod's
options come from the environment, as under training (estimator_dist's CPU defaults
are not applied here: set them to compare).
"""

import resource
import time

import horovod.tensorflow as hvd
import tensorflow as tf
from absl import app
from absl import flags

flags.DEFINE_integer("floats", 3_300_000, "Elements of the float32 tensor all-reduced.")
flags.DEFINE_integer("repeats", 50, "All-reduces measured, after 10 unmeasured.")


def _cpu_secs():
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def main(_):
  f = flags.FLAGS
  tf.compat.v1.disable_eager_execution()
  hvd.init()
  tensor = tf.Variable(tf.ones([f.floats]))
  reduced = hvd.allreduce(tensor.read_value(), op=hvd.Average)
  config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1)
  with tf.compat.v1.Session(config=config) as session:
    session.run(tf.compat.v1.global_variables_initializer())
    for _ in range(10):
      session.run(reduced)
    wall, cpu = time.monotonic(), _cpu_secs()
    for _ in range(f.repeats):
      session.run(reduced)
    wall, cpu = time.monotonic() - wall, _cpu_secs() - cpu
  print(f"rank {hvd.rank()}: all-reduce of {4 * f.floats / 1e6:.1f} MB: "
        f"{1000 * wall / f.repeats:.1f} ms wall, {1000 * cpu / f.repeats:.1f} ms CPU", flush=True)


if __name__ == "__main__":
  app.run(main)
