"""How far a running job is, said every --progress_secs by the launcher.

  estimator-dist launch: progress: step 1200/2000 (60 %), 14.9 steps/s, 954 examples/s,
      ETA 54 s, slowest worker:1 (-12 steps), eval accuracy 0.971 @1000

(one line). The steps come from the training tasks' heartbeats (`contract.heartbeat.Progress`,
written about once a second), the evaluation from model_dir/eval. The rate is over the
time since the previous line, so it follows the job as it speeds up or slows down;
examples/s is the rate times the global batch of the job's summary, and the ETA the steps
left at that rate. A task is named slowest only when it is further behind than its beats,
a second apart, explain (a stopped or stuck task shows here long before the hang
timeout ends the job).
"""

import os
import time

from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import heartbeat
from estimator_dist.watching import terminal_bar

# A task this many beats behind the job's step is slower, not just between two beats.
_BEATS_BEHIND = 2.0


class ProgressLines:
  """Prints the progress of one job from its heartbeats (in its mailbox) and model_dir, each
  line through `log`, after `label` (none where all the lines are progress lines)."""

  def __init__(self, *, mailbox, model_dir, every_secs, log, bar=None, label="progress: "):
    self._mailbox, self.model_dir, self._log = mailbox, model_dir, log
    self._label = label
    self._every_secs, self._bar = every_secs, bar  # bar: a terminal_bar.TerminalBar
    self._next = time.monotonic() + every_secs
    self._next_bar, self._details = 0.0, ""
    self._previous = None  # (step, time) of the previous line, or of the first beat.
    self._end_said = False  # Whether a line said where training ended.

  @classmethod
  def of(cls, group, *, model_dir, every_secs):
    """The progress of `group`'s job (a processes.TaskGroup); on a terminal, also a live
    bar that takes over the group's output until `close`."""
    bar = terminal_bar.TerminalBar.on(group) if every_secs else None
    return cls(mailbox=group.mailbox, model_dir=model_dir, every_secs=every_secs,
               log=group.log, bar=bar)

  def close(self):
    if self._bar:
      self._bar.close()

  def tick(self, *, final=False):
    """Prints a line when one is due (`final`: now) and the tasks said how far they are;
    an error turns the lines off, in one line, and never ends the job."""
    if final:
      self._next = 0.0
    try:
      self._tick()
    except Exception as e:  # pylint: disable=broad-except
      self.close()
      self._every_secs, self._bar = 0, None
      self._log(f"no more progress lines: {type(e).__name__}: {e}")

  def _tick(self):
    if self._bar and self._mailbox and time.monotonic() >= self._next_bar:
      self._next_bar = time.monotonic() + 1  # As often as the tasks beat.
      tasks = heartbeat.progress_of(self._mailbox)
      if tasks:  # tqdm says the rate and the ETA; the latest line the slowest and the eval.
        self._bar.show(_job_step(tasks)[0], max(p.last_step for p in tasks.values()),
                       self._details)
    if not self._every_secs or not self._mailbox or time.monotonic() < self._next:
      if self._previous is None and self._mailbox:
        self._previous = _job_step(heartbeat.progress_of(self._mailbox))
      return
    self._next = time.monotonic() + self._every_secs
    tasks = heartbeat.progress_of(self._mailbox)
    now, ended = _job_step(tasks), all(p.ended for p in tasks.values())
    if now is None or (ended and self._end_said):
      return  # Nothing yet, or training ended and was said.
    parts = describe(tasks, previous=self._previous,
                     evaluation=_latest_evaluation(self.model_dir))
    self._log(self._label + ", ".join(parts))
    self._details = ", ".join(p for p in parts if p.startswith(("slowest", "eval")))
    self._previous, self._end_said = now, ended


def describe(tasks, *, previous, evaluation=None):
  """The parts of one progress line: `tasks` {name: Progress}, `previous` (step, time)."""
  step, at = _job_step(tasks)
  last = max(p.last_step for p in tasks.values())
  parts = [f"step {step}/{last} ({min(100, 100 * step // max(last, 1))} %)"]
  rate = None
  if previous and at > previous[1] and step > previous[0]:
    rate = (step - previous[0]) / (at - previous[1])
    parts.append(f"{rate:.1f} steps/s")
    batch = max((p.examples_per_step or 0) for p in tasks.values())
    if batch:
      parts.append(f"{rate * batch:.0f} examples/s")
    parts.append(f"ETA {duration(max(last - step, 0) / rate)}")
  training = {name: p for name, p in tasks.items() if not p.ended}
  slowest = min(training, key=lambda name: training[name].step, default=None)
  behind = step - training[slowest].step if slowest else 0
  if rate and len(tasks) > 1 and behind > rate * _BEATS_BEHIND:
    parts.append(f"slowest {slowest} (-{behind} steps)")
  if evaluation and evaluation[1]:
    eval_step, metrics = evaluation
    name = next((m for m in ("accuracy", "loss") if m in metrics), sorted(metrics)[0])
    parts.append(f"eval {name} {metrics[name]:.4g} @{eval_step}")
  return parts


def _job_step(tasks):
  """(step, time) of the task furthest on: the job's global step; None before any."""
  if not tasks:
    return None
  furthest = max(tasks.values(), key=lambda p: (p.step, p.time))
  return furthest.step, furthest.time


def _latest_evaluation(model_dir):
  """(step, metrics) of the newest evaluation in model_dir/eval, or None."""
  if (not model_dir or checkpoint_names.is_url(model_dir) or
      not os.path.isdir(os.path.join(model_dir, "eval"))):
    return None
  from estimator_dist.outputs import event_files  # pylint: disable=g-import-not-at-top
  metrics = event_files.eval_metrics(model_dir)  # Imports TensorBoard: once there is one.
  if not metrics:
    return None
  step = max(metrics)
  return step, {k: v for k, v in metrics[step].items() if k != "global_step"}


def duration(secs):
  """`secs` as people read it: 54 s, 12 min, 3.4 h."""
  if secs < 120:
    return f"{secs:.0f} s"
  if secs < 7200:
    return f"{secs / 60:.0f} min"
  return f"{secs / 3600:.1f} h"
