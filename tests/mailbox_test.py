"""The job's mailbox: each message a task posts (that it joined, the chief's model_dir, its
summary, a round, preemption's save and acknowledgements, its heartbeat), read back the
one way the launcher and the other tasks read it."""

import collections
import os
import threading
import time

import pytest

import estimator_dist as ed
from estimator_dist import errors
from estimator_dist.contract import chief_model_dir
from estimator_dist.contract import env_vars
from estimator_dist.contract import heartbeat
from estimator_dist.contract import joined
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.contract import rounds
from estimator_dist.contract import summary


@pytest.fixture(name="mailbox")
def fixture_mailbox(tmp_path, monkeypatch):
  mailbox = mailbox_lib.Mailbox(str(tmp_path / "mailbox")).emptied()
  monkeypatch.setenv(env_vars.MAILBOX, mailbox.directory)
  return mailbox


def test_a_message_is_posted_whole_read_back_and_gone_with_the_attempt(mailbox):
  assert mailbox.read("topic", "a") is None and mailbox.names("topic") == []
  mailbox.post("topic", "a", {"x": 1})
  mailbox.post("topic", "b", [2])
  open(mailbox.path("topic", "c.tmp" + ".partial"), "w").close()  # One being written.
  assert mailbox.read("topic", "a") == {"x": 1} and mailbox.names("topic") == ["a", "b"]
  assert oct(os.stat(mailbox.path("topic", "a")).st_mode & 0o777) == "0o644"
  mailbox.emptied()  # The next attempt's: an earlier attempt's messages do not count.
  assert mailbox.names("topic") == [] and os.path.isdir(mailbox.directory)


def test_what_a_program_leaves_for_a_message_reads_as_none(mailbox):
  """Every reader of the engines (the launcher, SLURM's job end and watcher, Spark's
  driver) reads a message through `value`: what is not one the toolkit posts is none."""
  os.mkfifo(mailbox.path(mailbox_lib.JOINED, "chief:0"))  # Read without blocking.
  with open(mailbox.path(mailbox_lib.VERDICTS, "1-x"), "wb") as f:
    f.write(os.urandom(4096))
  mailbox.post(mailbox_lib.MODEL_DIR, mailbox_lib.CHIEF, {"model_dir": ["not", "a path"]})
  mailbox.post(mailbox_lib.PREEMPTION, mailbox_lib.CHIEF, "step 5")
  assert mailbox.value(mailbox_lib.JOINED, "chief:0", str, key="strategy") is None
  assert mailbox_lib.verdict_codes(mailbox) == set()
  assert chief_model_dir.read(mailbox) is None
  assert mailbox_lib.saved_on_preemption(mailbox) is None
  assert joined.not_joined(mailbox, {"chief:0"}, strategy="multi_worker") == {
      "chief:0": "never started the job's strategy"}


def test_a_wait_returns_the_message_once_posted_or_none_at_its_timeout(mailbox):
  later = threading.Timer(0.5, mailbox.post, ("topic", "a", {"step": 3}))
  later.start()
  begun = time.monotonic()
  assert mailbox.wait("topic", "a", poll_secs=0.05) == {"step": 3}
  assert time.monotonic() - begun >= 0.4
  assert mailbox.wait("topic", "b", timeout_secs=0.2, poll_secs=0.05) is None


def test_without_a_mailbox_a_task_tells_nobody(tmp_path, monkeypatch):
  monkeypatch.delenv(env_vars.MAILBOX, raising=False)
  task = ed.TaskInfo("chief", 0, 0, 1)
  joined.write(task, strategy="local")
  chief_model_dir.write("/elsewhere")
  summary.write_record({"steps": 1}, warn=pytest.fail)
  assert heartbeat.path_of(task, os.environ) is None
  # A Spark executor that does not share the driver's file system: nobody reads there.
  monkeypatch.setenv(env_vars.MAILBOX, str(tmp_path / "gone"))
  joined.write(task, strategy="local")
  assert heartbeat.path_of(task, os.environ) is None and not list(tmp_path.iterdir())
  # An instrumented program's task cannot agree with the others: one line says why.
  with pytest.raises(errors.ConfigError, match="gone is not on this host, so its tasks "
                     "cannot agree: the job's model_dir must be a directory every host"):
    rounds.publish("train", 1, {})
  monkeypatch.delenv(env_vars.MAILBOX)
  with pytest.raises(errors.ConfigError, match="run the program through it"):
    rounds.publish("train", 1, {})


def test_a_task_that_joined_is_told_apart_from_one_that_did_not(mailbox):
  joined.write(ed.TaskInfo("chief", 0, 0, 3), strategy="multi_worker")
  joined.write(ed.TaskInfo("worker", 0, 1, 3), strategy="horovod")
  with open(mailbox.path(mailbox_lib.JOINED, "worker:1"), "w") as f:
    f.write("not json")
  assert joined.not_joined(mailbox, {"chief:0", "worker:0", "worker:1", "ps:0"},
                           strategy="multi_worker") == {
      "ps:0": "never started the job's strategy",
      "worker:0": "started horovod, not the job's multi_worker",
      "worker:1": "never started the job's strategy"}


def test_the_launcher_learns_the_chiefs_model_dir_and_summary(mailbox):
  assert chief_model_dir.read(mailbox) is None and chief_model_dir.read(None) is None
  chief_model_dir.write("/their/own")
  assert chief_model_dir.read(mailbox) == "/their/own"
  warned = []
  assert summary.read_record(mailbox, warn=warned.append) is None and not warned
  assert summary.read_record(mailbox, warn=warned.append, expected=True) is None
  assert warned == [summary.MISSING]  # A job that succeeded without one: said.
  warned.clear()
  summary.write_record({"strategy": "horovod", "steps": 20}, warn=pytest.fail)
  assert summary.read_record(mailbox, warn=warned.append) == {"strategy": "horovod",
                                                              "steps": 20}
  mailbox.post(mailbox_lib.SUMMARY, mailbox_lib.CHIEF, ["not", "fields"])
  assert summary.read_record(mailbox, warn=warned.append) is None
  assert len(warned) == 1 and "not a JSON object of names and values" in warned[0], warned


def test_a_round_waits_for_the_chiefs_value(mailbox):
  later = threading.Timer(0.5, rounds.publish, ("train", 1, {"steps": 200}))
  later.start()
  begun = time.time()
  assert rounds.wait_for("train", 1) == {"steps": 200}
  assert time.time() - begun >= 0.4
  assert mailbox.names(mailbox_lib.ROUNDS) == ["train-1"]
  worker = ed.TaskInfo("worker", 0, 1, 2)
  assert [rounds.next_round(k, worker) for k in ("x", "x", "y")] == [1, 2, 1]


def test_a_round_the_chief_never_makes_is_named(mailbox, monkeypatch):
  monkeypatch.setattr(rounds, "_counts", collections.Counter())
  monkeypatch.setattr(rounds, "_me", [])
  worker = ed.TaskInfo("worker", 0, 1, 2)
  assert rounds.next_round("train", worker) == 1
  rounds.publish("train", 1, {})
  rounds.publish("train", 2, {})  # The chief's second train() before any export.
  assert rounds.next_round("export", worker) == 1
  with pytest.raises(errors.ConfigError, match=r"worker:0 made export\(\) call 1, which the "
                     r"chief never makes: it made train\(\) call 2 first, where worker:0 "
                     r"had made 1 train\(\) call\."):
    rounds.wait_for("export", 1)
  assert rounds.next_round("train", worker) == 2 and rounds.wait_for("train", 2) == {}
  assert rounds.next_round("train", worker) == 3
  mailbox.post(mailbox_lib.ROUNDS, "ended-chief:0", {"train": 2})
  with pytest.raises(errors.ConfigError, match=r"worker:0 made train\(\) call 3, which the "
                     r"chief never makes: it ended after 2 train\(\) calls\."):
    rounds.wait_for("train", 3)


def test_a_chief_that_exited_without_saying_ends_a_workers_wait(mailbox, monkeypatch):
  # horovod.spark.run ends no rank when another fails: the engine says the chief exited.
  monkeypatch.setattr(rounds, "_counts", collections.Counter())
  monkeypatch.setattr(rounds, "_me", [])
  assert rounds.next_round("train", ed.TaskInfo("worker", 1, 1, 2)) == 1
  rounds.exited(mailbox, "chief:0", 1)
  rounds.exited(mailbox, "chief:0", 9)  # Once: the first word stands.
  with pytest.raises(errors.ConfigError, match=r"worker:1 waits for the chief's train\(\) "
                     r"call 1, but the chief exited with code 1 first: the job cannot go on"):
    rounds.wait_for("train", 1)
  mailbox.post(mailbox_lib.ROUNDS, "ended-worker:0", {"train": 2})
  rounds.exited(mailbox, "worker:0", 1)  # It said how it ended: that stands.
  assert mailbox.value(mailbox_lib.ROUNDS, "ended-worker:0", dict) == {"train": 2}


def test_the_launcher_names_a_round_a_worker_ended_without(mailbox):
  rounds.publish("train", 2, {})
  rounds.publish("export", 1, "/e")  # The chief exports alone: a worker need not.
  mailbox.post(mailbox_lib.ROUNDS, "ended-worker:1", {"train": 2})
  mailbox.post(mailbox_lib.ROUNDS, "ended-evaluator:0", {})  # Makes no train() calls.
  assert rounds.unmatched(mailbox) is None
  mailbox.post(mailbox_lib.ROUNDS, "ended-worker:0", {"train": 1})
  assert rounds.unmatched(mailbox).startswith(
      "the chief made train() call 2, which worker:0 never made: it ended after 1 train() call.")


def test_the_chiefs_save_on_preemption_is_read_as_its_step(mailbox):
  assert mailbox_lib.saved_on_preemption(mailbox) is None
  mailbox.post(mailbox_lib.PREEMPTION, mailbox_lib.CHIEF, {"step": "x"})  # A program's.
  assert mailbox_lib.saved_on_preemption(mailbox) is None
  mailbox.post(mailbox_lib.PREEMPTION, mailbox_lib.CHIEF, {"step": 120})
  assert mailbox_lib.saved_on_preemption(mailbox) == 120


def test_a_task_beats_in_the_mailbox(mailbox):
  task = ed.TaskInfo("worker", 1, 2, 3)
  path = heartbeat.path_of(task, os.environ)
  assert path == os.path.join(mailbox.directory, mailbox_lib.BEATS, "worker:1")
  assert heartbeat.path_of(ed.TaskInfo("ps", 0, 0, 3), os.environ) is None  # Not training.
  heartbeat.beat(path)
  assert heartbeat.stalled(mailbox, 60, expected={"worker:1"}) == []
  assert heartbeat.stalled(mailbox, 60, expected={"chief:0"}, first_beat_by=0) == ["chief:0"]
  heartbeat.beat(path, heartbeat.Progress(step=3, last_step=5))  # A hang line says where.
  assert heartbeat.last_steps(mailbox, ["chief:0", "worker:1"]) == (
      "chief:0 before its first step, worker:1 at step 3 of 5")
  heartbeat.end(path, heartbeat.Progress(step=5, last_step=5))
  assert heartbeat.ended(mailbox) == {"worker:1"}
  assert heartbeat.progress_of(mailbox)["worker:1"].ended
  assert heartbeat.idle_after_training(mailbox, 60) == []  # No watchdog says how it does.
  heartbeat.say_waiting(mailbox, "worker:1")  # For the chief's round, its training ended.
  assert heartbeat.idle_after_training(mailbox, 60) == []
  os.utime(mailbox.path(mailbox_lib.BEATS, "worker:1.busy"), (0, 0))
  assert heartbeat.idle_after_training(mailbox, 60) == []  # Its training ended just now.
  os.utime(mailbox.path(mailbox_lib.BEATS, "worker:1.ended"), (0, 0))
  assert heartbeat.idle_after_training(mailbox, 60) == ["worker:1"]  # Both long ago.
  assert heartbeat.stalled(mailbox, 60, expected={"worker:1"}) == []
  # The program's next train(): its beats count again, from now (once the first round's
  # end hid every later round's beats from the hang checks).
  heartbeat.begin(path)
  assert heartbeat.ended(mailbox) == set()
  assert heartbeat.idle_after_training(mailbox, 60) == []  # Training again.
  heartbeat.say_waiting(mailbox, "worker:1")  # For a round, before it trained: long ago.
  os.utime(mailbox.path(mailbox_lib.BEATS, "worker:1.busy"), (0, 0))
  heartbeat.end(path)  # Its beats after training count from its end.
  assert heartbeat.idle_after_training(mailbox, 60) == []
  heartbeat.say_waiting(mailbox, "worker:1")
  os.utime(mailbox.path(mailbox_lib.BEATS, "worker:1.ended"), (0, 0))
  assert heartbeat.idle_after_training(mailbox, 60) == []  # Said since.
  heartbeat.begin(path)
  assert heartbeat.stalled(mailbox, 60, expected={"worker:1"}, first_beat_by=0) == []
  os.utime(path, (0, 0))
  assert heartbeat.stalled(mailbox, 60, expected={"worker:1"}) == ["worker:1"]
  heartbeat.end(path)
  # A task ended before its training did (its companion says so): not stalled, but gone.
  early = mailbox.path(mailbox_lib.BEATS, "worker:2")
  heartbeat.beat(early)
  open(early + ".exited", "w").close()
  assert heartbeat.exited_early(mailbox) == {"worker:2"}  # worker:1's training ended.
  assert heartbeat.stalled(mailbox, 0.0, expected={"worker:2"}) == ["worker:2"]
  open(mailbox.path(mailbox_lib.BEATS, "worker:1.exited"), "w").close()
  assert heartbeat.exited_early(mailbox) == {"worker:2"}


def test_a_task_claims_its_start_once(mailbox):
  assert mailbox.claim(mailbox_lib.REACHED, "chief:0")
  assert not mailbox.claim(mailbox_lib.REACHED, "chief:0")
  assert mailbox.names(mailbox_lib.REACHED) == ["chief:0"]
