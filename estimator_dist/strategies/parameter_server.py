"""`parameter_server`: asynchronous training with compat.v1 ParameterServerStrategy.

Tasks: one chief, workers, one or more ps and an optional evaluator. The ps tasks serve
variables until every training task has finished, then exit by themselves: each chief
and worker enqueues a token into a queue that lives on every ps when its training ends,
and a ps exits once it has dequeued one token per training task.
"""

import atexit
import concurrent.futures
import contextlib
import os

import tensorflow as tf
from absl import logging
from tensorflow.python.distribute import distribute_config  # pylint: disable=g-direct-tensorflow-import

from estimator_dist import command_line
from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.strategies import base
from estimator_dist.strategies import options as options_lib
from estimator_dist.task import early_stopping
from estimator_dist.task import preemption

_DONE_QUEUE = "estimator_dist_training_done_{}"


def _done_queue(ps_index):
  with tf.device(f"/job:ps/task:{ps_index}"):
    return tf.queue.FIFOQueue(capacity=1024, dtypes=[tf.int32], shapes=[[]],
                              shared_name=_DONE_QUEUE.format(ps_index),
                              name=f"training_done_{ps_index}")


@contextlib.contextmanager
def _ready_poll_every(secs):
  """Non-chief tasks check every `secs` (not TF's 30 s) whether the chief has initialized."""
  cls = tf.compat.v1.train.SessionManager
  original = cls.__init__

  def init(self, *args, **kwargs):
    kwargs.setdefault("recovery_wait_secs", secs)
    original(self, *args, **kwargs)
  cls.__init__ = init
  try:
    yield
  finally:
    cls.__init__ = original


def _finished(future, poll_secs=0.5):
  """Whether `future` is done, after waiting at most `poll_secs` for it."""
  try:
    future.exception(timeout=poll_secs)
    return True
  except concurrent.futures.TimeoutError:
    return False


def _only(device, timeout_secs=None):
  """A session config that waits for no task but `device` (and at most `timeout_secs`)."""
  return tf.compat.v1.ConfigProto(device_filters=[device],
                                  operation_timeout_in_ms=int((timeout_secs or 0) * 1000))




class ParameterServerAdapter(base.StrategyAdapter):
  """Variables on ps tasks; chief and workers update them asynchronously."""
  name = "parameter_server"
  Options = options_lib.ParameterServerOptions
  _strategy = None
  _told_at_exit = False  # Whether this task tells the ps tasks it is done when it exits.

  @property
  def remote(self):
    """Whether this process is a standalone client of remote_cluster."""
    return self.options.remote_cluster is not None

  def task_from_environment(self):
    if not self.remote:
      return super().task_from_environment()
    if cluster_lib.parse_tf_config(os.environ.get("TF_CONFIG")).cluster:
      raise cluster_lib.ClusterConfigError(
          "remote_cluster makes this process a client that drives the cluster, so TF_CONFIG "
          "must not describe one; unset TF_CONFIG.")
    return cluster_lib.client_task(self.options.remote_cluster)

  def start_backend(self):
    if self.task.is_training:
      self._strategy = tf.compat.v1.distribute.experimental.ParameterServerStrategy()

  @property
  def num_replicas(self):
    return max(self.task.size, 1)

  def distribute_strategy(self):
    return self._strategy

  def run_config(self, model_dir, **kwargs):
    if not self.remote:
      return super().run_config(model_dir, **kwargs)
    # The standalone client mode of TensorFlow's distribute coordinator: this process
    # drives every worker of the remote cluster, one thread each.
    kwargs.setdefault("session_config", self.session_config())
    return tf.estimator.RunConfig(
        model_dir=model_dir, experimental_distribute=distribute_config.DistributeConfig(
            train_distribute=self._strategy, remote_cluster=dict(self.task.cluster)), **kwargs)

  def session_config(self):
    # RunConfig's between-graph defaults: talk only to the ps tasks and to yourself.
    config = super().session_config()
    if self.task.is_training and not self.remote:
      config.device_filters.extend(["/job:ps", f"/job:{self.task.role}/task:{self.task.index}"])
    return config

  def stop_requested(self, requested):
    # On the first ps, where every worker reads it; a request stays until the job ends.
    with tf.device("/job:ps/task:0"):
      flag = tf.compat.v1.get_variable(
          "estimator_dist/stop_requested", shape=(), dtype=tf.int32,
          initializer=tf.zeros_initializer(), trainable=False,
          collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES], use_resource=True)
      return tf.compat.v1.assign(flag, tf.maximum(flag.read_value(), requested))

  def train(self, estimator, train_spec, eval_spec):
    if self.task.role == "ps":
      self._serve()
      return None
    if self.task.is_chief and not self.remote:
      return super().train(estimator, train_spec, eval_spec)
    with _ready_poll_every(1):  # A client runs its remote workers' sessions in threads.
      return super().train(estimator, train_spec, eval_spec)

  def _serve(self):
    """Serves this ps task until every chief and worker has signalled the end."""
    task = self.task
    server = tf.distribute.Server(
        tf.train.ClusterSpec({r: list(a) for r, a in task.cluster.items() if r != "evaluator"}),
        job_name="ps", task_index=task.index, protocol="grpc")
    logging.info(command_line.line("ps:%d serving at %s until %d training task(s) finish"),
                 task.index, task.cluster["ps"][task.index], task.size)
    with tf.Graph().as_default():
      done = _done_queue(task.index).dequeue_many(task.size)
      config = _only(f"/job:ps/task:{task.index}")
      with tf.compat.v1.Session(server.target, config=config) as session:
        options = None
        if self.options.ps_done_timeout_secs:
          options = tf.compat.v1.RunOptions(timeout_in_ms=int(self.options.ps_done_timeout_secs * 1000))
        # In a thread: the main thread stays free to take a signal and pass it on.
        waiting = concurrent.futures.ThreadPoolExecutor(1).submit(session.run, done,
                                                                  options=options)
        told = False
        while not _finished(waiting):
          told = told or (preemption.requested() is not None and self._tell_preemption(server))
        waiting.result()
    logging.info(command_line.line("ps:%d: all training tasks finished; exiting"), task.index)
    if preemption.requested():
      raise preemption.Preempted()

  def _tell_preemption(self, server):
    """A ps asked to stop asks the training tasks, through their stop agreement (the
    variable on ps:0 that every worker reads): they stop at one step and the chief saves
    there while the ps still serves. True once told (the variable exists from the
    workers' first session on)."""
    with tf.Graph().as_default():
      request = self.stop_requested(tf.constant(early_stopping.PREEMPT))
      try:
        with tf.compat.v1.Session(server.target, config=_only("/job:ps/task:0", 10)) as session:
          session.run(request)
      except tf.errors.OpError as e:
        logging.info(command_line.line("ps:%d: the training tasks cannot be asked yet (%s)"),
                     self.task.index, e.message.splitlines()[0])
        return False
    logging.warning(command_line.line("ps:%d: asked the training tasks to stop at one step "
                                      "and save"), self.task.index)
    return True

  def after_training(self):
    """Tells every ps that this training task is done, when its program ends: the program
    may still use them after training (a next round of train(), or its own Estimator's
    export, predict or evaluate, whose variables are on the ps tasks)."""
    if not self.task.is_training or self.remote:  # Standard servers wait for no token.
      return
    if not self._told_at_exit:
      self._told_at_exit = True
      atexit.register(self._tell_the_ps_tasks)

  def _tell_the_ps_tasks(self):
    for i, address in enumerate(self.task.cluster["ps"]):
      with tf.Graph().as_default():
        enqueue = _done_queue(i).enqueue([self.task.rank])
        config = _only(f"/job:ps/task:{i}", timeout_secs=60)
        try:
          with tf.compat.v1.Session(f"grpc://{address}", config=config) as session:
            session.run(enqueue)
        except tf.errors.OpError as e:
          logging.warning(command_line.line("could not tell ps:%d at %s that training ended "
                                            "(%s); it exits when its job is stopped."),
                          i, address, e.message)
