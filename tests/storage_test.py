"""A sweep's Optuna storage read and beaten for through what Optuna keeps stable.

The heartbeat goes through the storage's interface (Optuna beats only for
Study.optimize); these tests fail on an Optuna release that changes it, while pyproject
allows optuna<6.
"""

import time
import warnings

import optuna
import pytest

from estimator_dist.experiments import storage as storage_lib

# Optuna warns that heartbeats are meant for Study.optimize; a sweep asks and tells.
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage")


@pytest.fixture
def study(tmp_path):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    # The sweep's own storage beats every 5 s and waits 20 s; these tests 1 s.
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'study.db'}",
                                         heartbeat_interval=1, grace_period=1)
  return optuna.create_study(study_name="sweep", storage=storage)


def test_stored_is_what_the_study_holds_of_a_running_trial(study):
  first, second = study.ask(), study.ask()
  second.set_user_attr("model_dir", "/runs/trial_1")
  second.report(0.5, step=100)
  stored = storage_lib.stored(study, second)
  assert stored.number == second.number != first.number
  assert stored.user_attrs == {"model_dir": "/runs/trial_1"}
  assert stored.intermediate_values == {100: 0.5}
  assert stored.state == optuna.trial.TrialState.RUNNING


def test_a_beaten_trial_whose_beats_stop_goes_stale_and_one_never_beaten_does_not(study,
                                                                                  tmp_path):
  beaten, silent = study.ask(), study.ask()
  storage = storage_lib.open_storage(f"sqlite:///{tmp_path / 'study.db'}")
  storage_lib.beat(storage, beaten)
  time.sleep(2.5)  # Past the grace period, in SQLite's whole seconds.
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    optuna.storages.fail_stale_trials(study)
  assert storage_lib.stored(study, beaten).state == optuna.trial.TrialState.FAIL
  assert storage_lib.stored(study, silent).state == optuna.trial.TrialState.RUNNING


def test_a_journal_keeps_no_heartbeats(tmp_path):
  assert storage_lib.heartbeats(f"journal:{tmp_path / 'journal.log'}") is None
