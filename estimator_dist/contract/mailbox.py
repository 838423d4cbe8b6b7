"""The mailbox: what a job's tasks tell its launcher and each other, for one attempt.

One directory every task of the job reaches, named by env_vars.MAILBOX, new for each
attempt of the job (an earlier attempt's messages never count), holds one message per
file, `<topic>/<name>`, written whole and read warily (`whole_file`):

  summary/chief     the chief's training summary (contract/summary.py)
  joined/<task>     that a task started the job's strategy (contract/joined.py)
  model_dir/chief   the model_dir the chief trains in (its program may name its own)
  rounds/<kind>-<n> the chief's decision of an instrumented program's n-th call of a kind
  preemption/<task> the chief's save on a preemption (`chief`), each other task's
                    acknowledgement (task/preemption_save.py)
  beats/<task>      a training task's heartbeat (contract/heartbeat.py)
  reached/<n>       that task n started, before its program (SLURM's script: its process
                    id; Spark's barrier tasks: role:index)
  verdicts/<id>     the toolkit's reason for the exit code a process is about to exit with
                    (a taken port, divergence, a preemption, a refused configuration)

The launcher reads an exit code as the toolkit's (new ports, no restart after divergence,
a preemption) only when a task of the attempt posted that verdict: a program's own exit
code, whatever its number, stays the program's. Heartbeats are the one topic read by age, not content: a task touches its file about
once a second, and its modification time is the beat.

Where the directory is depends on the engine, which makes it: the local launcher's
private job directory (for an instrumented program on several hosts, in its model_dir,
which they share); in the model_dir of a SLURM job (`estimator_dist/mailbox-<job
id>-<restart count>`) or a Spark job (`.../mailbox-spark-<application id>-<driver pid>`),
which its tasks share already; for the pods of an instrumented program on Kubernetes,
in its model_dir (`.../mailbox-k8s-<name>-<id>`, new with each manifest: a task starts
once per mailbox, instrument/in_container.py). A task without one (a pod of a program of
ours, a job the user started by hand) tells nobody: nothing it does waits on it then.

What stays in the model_dir is the run's own state, which outlives an attempt and is
read by whoever resumes it: checkpoints, and the sweep's stop request and the chief's
early-stop marker (contract/stop_files.py).
"""

import dataclasses
import os
import shutil
import time
import uuid
from typing import Optional

from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import whole_file

SUMMARY = "summary"
JOINED = "joined"
MODEL_DIR = "model_dir"
ROUNDS = "rounds"
PREEMPTION = "preemption"
BEATS = "beats"
VERDICTS = "verdicts"
REACHED = "reached"
CHIEF = "chief"  # The name of a message only the chief sends.


@dataclasses.dataclass(frozen=True)
class Mailbox:
  """The mailbox in `directory`."""
  directory: str

  @classmethod
  def of_environment(cls, env=os.environ) -> Optional["Mailbox"]:
    """This task's mailbox: None when its engine gave it none, or when the directory is
    not there (a Spark executor that does not share the driver's file system)."""
    directory = env.get(env_vars.MAILBOX)
    return cls(directory) if directory and os.path.isdir(directory) else None

  def emptied(self):
    """The mailbox, made new (an engine's, before each attempt)."""
    shutil.rmtree(self.directory, ignore_errors=True)
    os.makedirs(self.directory)
    return self

  def path(self, topic, name):
    """The file of message `name` of `topic`, its topic's directory made."""
    os.makedirs(os.path.join(self.directory, topic), exist_ok=True)
    return os.path.join(self.directory, topic, name)

  def post(self, topic, name, value):
    """Posts `value` (JSON) as message `name` of `topic`, replacing one posted before."""
    whole_file.write_json(self.path(topic, name), value)

  def claim(self, topic, name):
    """Posts message `name` of `topic`, empty, unless it is there already: True the first
    time, False after (a task starts once per mailbox). Makes the mailbox if it is not."""
    try:
      os.close(os.open(self.path(topic, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
      return False
    return True

  def read(self, topic, name):
    """The value of message `name` of `topic`; None before it is posted. Unreadable when
    something else is at its path (a program's doing: it sees the variable)."""
    try:
      return whole_file.read_json(os.path.join(self.directory, topic, name))
    except FileNotFoundError:
      return None

  def value(self, topic, name, kind, *, key=None):
    """Message `name` of `topic` (its `key`, given one) when it is a `kind`; None before
    it is posted, and when what is there is not what the toolkit posts (a program's doing:
    it sees the variable)."""
    try:
      value = self.read(topic, name)
      value = value[key] if key is not None and value is not None else value
    except (OSError, ValueError, TypeError, KeyError):
      return None
    return value if isinstance(value, kind) else None

  def modified(self, topic, name):
    """When message `name` of `topic` was last posted or touched (time.time()); None
    before it is."""
    try:
      return os.path.getmtime(os.path.join(self.directory, topic, name))
    except FileNotFoundError:
      return None

  def names(self, topic):
    """The names of the messages of `topic` posted so far."""
    try:
      return sorted(name for name in os.listdir(os.path.join(self.directory, topic))
                    if not name.endswith(whole_file.SUFFIX))
    except FileNotFoundError:
      return []

  def wait(self, topic, name, *, timeout_secs=None, poll_secs=0.2, while_waiting=None):
    """The value of message `name` of `topic` once it is posted; None after `timeout_secs`
    (None: waits until it is; the engine ends a task whose peers failed or hang).
    `while_waiting()` is called between two looks (it may raise)."""
    deadline = None if timeout_secs is None else time.monotonic() + timeout_secs
    while (value := self.read(topic, name)) is None:
      if deadline is not None and time.monotonic() >= deadline:
        return None
      if while_waiting:
        while_waiting()
      time.sleep(poll_secs)
    return value


def saved_on_preemption(mailbox):
  """The step the chief saved at on a preemption (its PREEMPTION message), or None."""
  return mailbox.value(PREEMPTION, CHIEF, int, key="step")


def preempted(mailbox):
  """Whether the toolkit stopped this attempt on a preemption: a task's verdict of
  errors.PREEMPTED_EXIT_CODE, or the chief's save. A program's own 200 is neither."""
  return (errors.PREEMPTED_EXIT_CODE in verdict_codes(mailbox) or
          saved_on_preemption(mailbox) is not None)


def post_verdict(code, why, env=os.environ, *, mailbox=None, name=None):
  """Says, before this process exits with `code` (or the watcher stops the job), that the
  toolkit chose it, and `why`, in `mailbox` (default the environment's; nowhere without
  one) under `name` (default one of its own). An exit is not held up by a mailbox it
  cannot write."""
  mailbox = mailbox or Mailbox.of_environment(env)
  if mailbox:
    try:
      mailbox.post(VERDICTS, name or f"{os.getpid()}-{uuid.uuid4().hex[:8]}",
                   {"code": int(code), "why": why})
    except OSError:
      pass


def verdict_codes(mailbox):
  """The exit codes the toolkit chose in the tasks of this attempt."""
  codes = {mailbox.value(VERDICTS, name, int, key="code")
           for name in mailbox.names(VERDICTS)}
  return codes - {None}
