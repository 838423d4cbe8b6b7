"""The model_dir the chief trains in, which the launcher learns: a program that names its
own (its RunConfig, its --job-dir) trains there, not in the directory the launcher made or
was given. The chief posts it in the job's mailbox when its run starts; the launcher
follows it for progress, restarts and curves."""

from estimator_dist.contract import mailbox as mailbox_lib


def write(model_dir):
  """Posts the chief's `model_dir` (nowhere without a mailbox)."""
  mailbox = mailbox_lib.Mailbox.of_environment()
  if mailbox:
    mailbox.post(mailbox_lib.MODEL_DIR, mailbox_lib.CHIEF, {"model_dir": model_dir})


def read(mailbox):
  """The chief's model_dir posted in `mailbox`; None before the chief posted one (or
  without a mailbox)."""
  return mailbox and mailbox.value(mailbox_lib.MODEL_DIR, mailbox_lib.CHIEF, str,
                                   key="model_dir")
