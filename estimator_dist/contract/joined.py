"""Which tasks joined their job's strategy: the message a task posts when it starts the
job's strategy from its environment, and what the launcher makes of them.

A job whose tasks all exit 0 may still not have trained together: a program that ignores
the cluster (its own --strategy flag, plain `tf.estimator` calls) trains alone on every
task, or on the chief while the others skip. Each task that starts the strategy posts
`joined/<role>:<index>` in the job's mailbox (`write`, called by the strategies'
factory), and a job counts as a success only when every task it expects did
(`not_joined`).
"""

from estimator_dist.contract import mailbox as mailbox_lib


def write(task, *, strategy):
  """Posts that `task` (a TaskInfo) started `strategy` (nowhere without a mailbox)."""
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox:
    mailbox.post(mailbox_lib.JOINED, task.name,
                 {"strategy": strategy, "size": task.size})


def not_joined(mailbox, expected, *, strategy):
  """The names among `expected` that posted no message of joining `strategy` in
  `mailbox`, each with why: {name: reason}."""
  found = {}
  for name in sorted(expected):
    joined = mailbox.value(mailbox_lib.JOINED, name, str, key="strategy")
    if joined is None:
      found[name] = "never started the job's strategy"
    elif joined != strategy:
      found[name] = f"started {joined}, not the job's {strategy}"
  return found


def failure(missing, *, strategy):
  """The line that fails a job whose tasks exited 0 without all joining `strategy`
  (`missing`: `not_joined`'s)."""
  return (f"every task exited 0, but the job did not train together under {strategy}: "
          + "; ".join(f"{name} {why}" for name, why in missing.items())
          + ". The program ignores the job's cluster: each task trained alone, or not at "
          "all (--instrument=off runs a program as it is; a program that imports "
          "estimator_dist joins through ed.train_and_evaluate, and ed.run_program with "
          "ed.define_flags()).")
