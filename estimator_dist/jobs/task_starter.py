"""Starts the tasks of one job of the local launcher: inside its sandbox, with the
environment a local job's tasks get (its lock, the watchdog's settings, its mailbox, the
preload library, never the tracking variables)."""

import dataclasses
from typing import Optional

from estimator_dist.contract import bind_address
from estimator_dist.contract import cluster as cluster_lib
from estimator_dist.contract import env_vars
from estimator_dist.contract import process_identity
from estimator_dist.contract import task_env
from estimator_dist.instrument import launching
from estimator_dist.jobs import horovodrun
from estimator_dist.jobs import launch_tracking
from estimator_dist.jobs import spec
from estimator_dist.supervision import local_cluster
from estimator_dist.supervision import processes
from estimator_dist.supervision import sandbox as sandbox_lib


def _horovodrun_env():
  # mpirun tags every write, not every line, and an unbuffered print writes each of
  # its arguments on its own; buffered, a flushed print or log record is one write.
  env = processes.child_env()
  env.pop("PYTHONUNBUFFERED")
  return env


def job_environment(job, options, *, mailbox=None):
  """The variables every task of a local job gets (`task_env.task_environment`): the
  job's, and the launcher's `options` (LaunchOptions): grace, watchdog, model_dir lock;
  `mailbox`: the job's (contract/mailbox.py), if it has one."""
  return task_env.task_environment(
      job=job, preemption_grace_secs=options.preemption_grace_secs,
      startup_timeout_secs=options.startup_timeout_secs, model_dir=options.model_dir,
      model_dir_lock=options.model_dir, mailbox=mailbox and mailbox.directory)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Starter:
  """Starts every task of a job: inside its sandbox, with a local job's environment.

  job: the JobSpec; command: the program every task runs, as the user gave it.
  options: the LaunchOptions as the job resolved them (model_dir, horovod).
  group: the job's TaskGroup; sandbox: its private namespaces, or None.
  local: every task on this machine; private_env: where the tasks' temporary files go.
  The tasks of a local job get the group's mailbox, made new for each attempt; tasks
  that may run on other hosts get none (their summary is the chief's printed line).
  instrumented: the main file of a program the tasks instrument (estimator_dist/
    instrument), or None.
  """
  job: spec.JobSpec
  command: list
  options: object  # launch_options.LaunchOptions
  group: processes.TaskGroup
  sandbox: Optional[sandbox_lib.Sandbox]
  local: bool
  private_env: dict
  instrumented: Optional[str] = None

  def _start(self, name, command, env):
    env = {**env, **self.private_env, env_vars.LAUNCHER: process_identity.launcher_identity(),
           **job_environment(self.job, self.options, mailbox=self.group.mailbox)}
    env = launch_tracking.task_env(env)
    if self.instrumented:
      env = launching.task_env(env, self.instrumented)
    if self.local:  # Loopback only, also on the host network (see contract/preload.py).
      env = bind_address.local_only_env(env)
    elif self.job.traits.ranks_from_horovodrun and self.options.horovod.network_interface:
      env = horovodrun.across_hosts_env(env, self.options.horovod.network_interface)
    self.group.start(name, self.sandbox.command(command) if self.sandbox else command, env)

  def beating(self):
    """The heartbeats of the job's training tasks: None for one per task, else per
    Horovod rank (none expected in elastic mode, where ranks come and go)."""
    if not self.job.traits.ranks_from_horovodrun:
      return None
    return set() if self.options.horovod.elastic else set(self.job.task_names)

  def expected_to_join(self):
    """The tasks that must record that they joined the job's strategy before the job
    counts as a success: every task of a distributed job (Horovod: every rank), none
    where nobody reads the records, where ranks come and go (elastic Horovod), or where
    one process on its own is the whole job (`local`)."""
    job = self.job
    if not self.group.mailbox or job.strategy == "local" or self.options.horovod.elastic:
      return set()
    return set(job.task_names)

  def start_tasks(self):
    """Starts every task of the job; returns the names of the training tasks."""
    if self.group.mailbox:  # An earlier attempt's messages do not count.
      self.group.mailbox.emptied()
    job, command = self.job, self.command
    if job.traits.ranks_from_horovodrun:
      ranks = horovodrun.command(command, num_workers=job.num_workers, run=self.options.horovod)
      env = _horovodrun_env()
      if self.local:  # Across hosts its SIGTERM lets horovodrun stop the ranks over SSH.
        ranks, env = horovodrun.shielded(ranks, env, directory=self.private_env["TMPDIR"])
      self._start("horovodrun", ranks, env)
      return {"horovodrun"}
    if job.traits.one_process:
      self._start("chief:0", command, processes.child_env())
      return {"chief:0"}
    cluster = local_cluster.local_cluster(job, host=self.options.host)
    self.group.log("cluster: " + ", ".join(
        f"{role}:{i} at {address}" for role, addresses in cluster.items()
        for i, address in enumerate(addresses)))
    for role, addresses in cluster.items():
      for index in range(len(addresses)):
        self._start(f"{role}:{index}", command,
                    processes.child_env(TF_CONFIG=cluster_lib.tf_config(cluster, role, index)))
    return {f"{role}:{i}" for role in cluster_lib.TRAINING_ROLES
            for i in range(len(cluster.get(role, ())))}
