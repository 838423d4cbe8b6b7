"""CPU and GPU placement of the training processes that share one machine.

Several training processes on one host each start thread pools sized for the whole
machine, and the kernel migrates their threads between cores; a synchronous job then
waits for whichever process was slowed down. By default each training process of a
multi-process host is pinned to its own equal share of the CPUs it may use, and
TensorFlow sizes its default thread pools to that share. Likewise each tf.distribute
training process of such a host gets its own share of the GPUs, and a ps task none.
"""

import os

from absl import logging

from estimator_dist import command_line
from estimator_dist import errors

CPU_AFFINITIES = ("auto", "none")


def share(cpus, local_rank, local_size):
  """The CPUs of local process `local_rank` of `local_size`; None if they cannot be split."""
  cpus = sorted(cpus)
  if local_size <= 1 or not 0 <= local_rank < local_size or len(cpus) < local_size:
    return None
  per_process = len(cpus) // local_size
  return cpus[local_rank * per_process:(local_rank + 1) * per_process]


def own_thread_ids():
  """The ids of this process's threads, as this process names them. /proc may be the
  host's, mounted outside the job's PID namespace (a local job's sandbox), where they have
  other ids: the status of each lists its ids in every namespace, its own last (NSpid)."""
  for entry in os.listdir("/proc/self/task"):
    try:
      with open(f"/proc/self/task/{entry}/status") as f:
        ids = next((line.split()[1:] for line in f if line.startswith("NSpid:")), [entry])
    except OSError:
      continue  # A thread that has ended.
    yield int(ids[-1])


def apply(cpu_affinity, task):
  """Pins this process's threads to its share of CPUs per `cpu_affinity`; returns them."""
  errors.check_choice("cpu_affinity", cpu_affinity, CPU_AFFINITIES)
  if cpu_affinity == "none" or not task.is_training or not hasattr(os, "sched_setaffinity"):
    return None
  cpus = share(os.sched_getaffinity(0), task.local_rank, task.local_size)
  if cpus is None:
    return None
  # Threads inherit their creator's CPUs; the ones running already (TensorFlow's pools
  # among them) are set one by one.
  for thread_id in own_thread_ids():
    try:
      os.sched_setaffinity(thread_id, cpus)
    except OSError:  # A thread that has ended.
      pass
  logging.info(command_line.line("training process %d of %d on this host runs on CPUs %s "
                                 "(cpu_affinity='none' turns this off)"),
               task.local_rank, task.local_size, cpus)
  return cpus


def gpu_share(task, count):
  """The indices of the `count` GPUs that `task` trains on, or None for all of them: a
  ps task none (its variables stay on the CPU); each training process of a multi-process
  host its own equal share, as TensorFlow's multi-worker guide has each worker own its
  GPUs (None where they cannot be split)."""
  if task.role == "ps":
    return []
  if not task.is_training:
    return None
  return share(range(count), task.local_rank, task.local_size)


def apply_gpus(task):
  """Makes only this task's share of the GPUs visible to TensorFlow (`gpu_share`), each
  growing its memory as needed; returns the indices kept, or None where all stay."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  gpus = tf.config.list_physical_devices("GPU")
  kept = gpu_share(task, len(gpus)) if gpus else None
  if kept is None and not (gpus and task.role == "evaluator"):
    return None
  try:
    if kept is not None:
      tf.config.set_visible_devices([gpus[i] for i in kept], "GPU")
    for i in range(len(gpus)) if kept is None else kept:  # An evaluator shares them all.
      tf.config.experimental.set_memory_growth(gpus[i], True)
  except RuntimeError as e:  # TensorFlow set its devices up already.
    logging.warning(command_line.line("%s trains on every GPU here: %s"), task.role, e)
    return None
  if kept is not None:
    logging.info(command_line.line("%s:%d on this host trains on GPU(s) %s of %d"), task.role,
                 task.index, kept, len(gpus))
  return kept
