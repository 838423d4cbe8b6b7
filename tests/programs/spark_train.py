"""Trains the model_zoo DNN on digits through estimator_dist.engines.spark on local Spark.

  python -m tests.programs.spark_train --strategy=multi_worker --num_workers=2 \
      --model_dir=/tmp/m --train_steps=200
"""

import json
import os
import shlex
import shutil
import sys
import tempfile

from absl import app
from absl import flags

flags.DEFINE_string("strategy", "multi_worker", "Strategy.")
flags.DEFINE_integer("num_workers", 2, "Workers.")
flags.DEFINE_integer("num_ps", None, "ps tasks.")
flags.DEFINE_string("model_dir", None, "Model directory.")
flags.DEFINE_integer("train_steps", 200, "Global steps.")
flags.DEFINE_integer("spark_slots", 2, "Spark local[N].")
flags.DEFINE_string("spark_master", None, "A Spark master URL (spark://host:port) instead of "
                    "local[spark_slots].")
flags.DEFINE_bool("fail_worker", False, "The non-chief worker raises instead of training.")
flags.DEFINE_string("program", None, "Run this program (a command line) on the tasks "
                    "instead of the DNN's function.")
flags.DEFINE_bool("alone", False, "Each task trains on its own, with plain tf.estimator, "
                  "ignoring the cluster (as a function not written for it would).")
flags.DEFINE_bool("spoil_summary", False, "After training, the chief leaves bytes that are "
                  "no text where its summary record goes.")
flags.DEFINE_string("network_interface", None, "horovod: the interface the ranks listen on.")
flags.DEFINE_string("horovod_controller", "gloo", "horovod: gloo or mpi.")
flags.DEFINE_float("progress_secs", 30, "The driver's progress lines this often.")
flags.DEFINE_float("hang_timeout_secs", 300, "The driver cancels a job whose task stops "
                   "beating this long.")
flags.DEFINE_bool("stop_worker", False, "The non-chief worker stops itself (SIGSTOP) once it "
                  "beats: alive, making no progress.")


def train(strategy, model_dir, train_steps, fail_worker=False, spoil_summary=False,
          alone=False, stop_worker=False):
  """What each Spark task runs: the DNN program's training, as a function."""
  import os  # pylint: disable=g-import-not-at-top
  import estimator_dist as ed  # pylint: disable=g-import-not-at-top
  worker = '"type": "worker"' in os.environ.get("TF_CONFIG", "")
  if fail_worker and worker:
    raise ValueError("this worker fails on purpose")
  if stop_worker and worker:
    import signal, threading, time  # pylint: disable=g-import-not-at-top,multiple-imports
    from estimator_dist.contract import mailbox as box  # pylint: disable=g-import-not-at-top
    beats = box.Mailbox.of_environment().path(box.BEATS, "worker:0")

    def stop():
      while not os.path.exists(beats):
        time.sleep(0.2)
      os.kill(os.getpid(), signal.SIGSTOP)
    threading.Thread(target=stop, daemon=True).start()
  from model_zoo import data, mnist_dnn  # pylint: disable=g-import-not-at-top
  (x_train, y_train), (x_eval, y_eval) = data.load()
  if alone:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    os.environ.pop("TF_CONFIG")
    estimator = tf.estimator.Estimator(
        mnist_dnn.model_fn, params={"learning_rate": 0.05, "batch_size": 32},
        model_dir=os.path.join(model_dir, os.urandom(4).hex()))
    estimator.train(data.input_fn(x_train, y_train, shuffle=True), max_steps=train_steps)
    return None
  metrics = ed.train_and_evaluate(
      mnist_dnn.model_fn, data.input_fn(x_train, y_train, shuffle=True),
      data.input_fn(x_eval, y_eval, shuffle=False), strategy=strategy, model_dir=model_dir,
      train_steps=train_steps, batch_size=32,
      params={"learning_rate": 0.05, "batch_size": 32})
  if spoil_summary and '"type": "chief"' in os.environ.get("TF_CONFIG", ""):
    from estimator_dist.contract import mailbox as box  # pylint: disable=g-import-not-at-top
    with open(box.Mailbox.of_environment().path(box.SUMMARY, box.CHIEF), "wb") as f:
      f.write(b'{"steps": "\xff\xfe"}')
  return {k: float(v) for k, v in metrics.items()} if metrics else None


def main(_):
  import pyspark  # pylint: disable=g-import-not-at-top
  from estimator_dist.engines import spark  # pylint: disable=g-import-not-at-top
  f = flags.FLAGS
  # The executors' Python: this one, which has estimator_dist and Horovod.
  os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
  # Spark's JVMs unpack native libraries (lz4's) into java.io.tmpdir, /tmp whatever
  # TMPDIR says, and leave them there: into a directory of this run's instead.
  scratch = tempfile.mkdtemp(prefix="spark_train_")
  java_tmp = f"-Djava.io.tmpdir={scratch}"
  conf = (pyspark.SparkConf().setMaster(f.spark_master or f"local[{f.spark_slots}]")
          .setAppName("estimator_dist").set("spark.ui.enabled", "false")
          .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
          .set("spark.driver.extraJavaOptions", java_tmp)
          .set("spark.executor.extraJavaOptions", java_tmp))
  if f.spark_master:
    # Start once the executors have every slot, and let a lost executor fail the job
    # (training resumes from its checkpoints when the job is run again).
    conf.setAll([("spark.cores.max", str(f.spark_slots)),
                 ("spark.executor.cores", str(f.spark_slots)),
                 ("spark.scheduler.minRegisteredResourcesRatio", "1.0"),
                 ("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s"),
                 ("spark.task.maxFailures", "1"), ("spark.stage.maxConsecutiveAttempts", "1"),
                 ("spark.executor.memory", "2g")])
  sc = pyspark.SparkContext(conf=conf)
  try:
    if f.program:  # A program file, as it is.
      results = spark.run_program(shlex.split(f.program), num_workers=f.num_workers,
                                  strategy=f.strategy, spark_context=sc,
                                  model_dir=f.model_dir, progress_secs=f.progress_secs)
      return print("RESULTS", json.dumps(results), flush=True)
    results = spark.run(train, num_workers=f.num_workers, strategy=f.strategy, num_ps=f.num_ps,
                        kwargs={"strategy": f.strategy, "model_dir": f.model_dir,
                                "train_steps": f.train_steps, "fail_worker": f.fail_worker,
                                "spoil_summary": f.spoil_summary, "alone": f.alone,
                                "stop_worker": f.stop_worker},
                        spark_context=sc, network_interface=f.network_interface,
                        horovod_controller=f.horovod_controller, model_dir=f.model_dir,
                        progress_secs=f.progress_secs, hang_timeout_secs=f.hang_timeout_secs)
  finally:
    sc.stop()
    shutil.rmtree(scratch, ignore_errors=True)
  print("RESULTS", json.dumps(results), flush=True)


if __name__ == "__main__":
  app.run(main)
