"""A sweep's Optuna storage: SQLite, any SQLAlchemy URL, or Optuna's journal file.

The relational storages keep heartbeats: a trial whose runner stopped beating for
GRACE_SECS is failed and queued again with its values, its user attributes and its
intermediate values (at most 3 times).

A running trial is read through the study's public API (`stored`). Optuna records
heartbeats only for `Study.optimize`; a sweep asks and tells, so `beat` records them
through the storage's own interface (`BaseStorage`, which optuna<6 has;
tests/storage_test.py fails on a release that changes it).
"""

import warnings

import optuna

from estimator_dist import errors

# Heartbeats tell a running trial from one whose runner died.
HEARTBEAT_SECS = 5
GRACE_SECS = 20


def stored(study, trial) -> optuna.trial.FrozenTrial:
  """What `study` holds of its trial `trial` (running or not): values, attributes,
  intermediate values, state."""
  return next(t for t in study.get_trials(deepcopy=False) if t.number == trial.number)


def heartbeats(url):
  """A storage of `url` to record trials' heartbeats in (`beat`); None for a journal,
  which keeps none."""
  return None if url.startswith("journal:") else open_storage(url)


def beat(storage, trial):
  """Records in `storage` (of `heartbeats`) that `trial`, a running trial, is alive."""
  study_id = storage.get_study_id_from_name(trial.study.study_name)
  storage.record_heartbeat(storage.get_trial_id_from_study_id_trial_number(study_id,
                                                                           trial.number))


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
