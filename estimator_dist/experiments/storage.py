"""A sweep's Optuna storage: SQLite, any SQLAlchemy URL, or Optuna's journal file.

The relational storages keep heartbeats: a trial whose runner stopped beating for
GRACE_SECS is failed and queued again with its values, its user attributes and its
intermediate values (at most 3 times).
"""

import warnings

import optuna

from estimator_dist import errors

# Heartbeats tell a running trial from one whose runner died.
HEARTBEAT_SECS = 5
GRACE_SECS = 20


def open_storage(url):
  """The Optuna storage of `url`; ConfigError when it cannot be reached."""
  try:
    if url.startswith("journal:"):
      return optuna.storages.JournalStorage(
          optuna.storages.journal.JournalFileBackend(url[len("journal:"):]))
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
      return optuna.storages.RDBStorage(
          url, heartbeat_interval=HEARTBEAT_SECS, grace_period=GRACE_SECS,
          heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(
              max_retry=3, inherit_intermediate_values=True))
  except Exception as e:  # pylint: disable=broad-except
    raise errors.ConfigError(
        f"--storage={url} cannot be opened: {type(e).__name__}: {str(e).splitlines()[0]}. "
        f"Give a reachable SQLAlchemy URL (postgresql://user:password@host/db), "
        f"journal:/shared/path, or leave it out for SQLite in --sweep_dir.") from None
