"""On a terminal, the job's progress as a live bar under the tasks' lines (tqdm).

  training:  60%|██████▏   | 1200/2000 [01:20<00:53, 14.9step/s, eval accuracy 0.971 @1000]

The launcher's output goes through the bar (`write`), which tqdm clears and draws again
around each line, so the lines of the tasks scroll above it. Only when the launcher's
output is a terminal, its job has heartbeats and tqdm is installed; elsewhere the
progress lines say the same. `close` gives the output back.
"""

import importlib.util


class TerminalBar:
  """A tqdm bar at the bottom of the terminal `group.out`; a stream for the job's lines."""

  def __init__(self, group):
    from tqdm import tqdm  # pylint: disable=g-import-not-at-top
    self._tqdm, self._group, self._out = tqdm, group, group.out
    self._bar = None  # Made at the first step seen: a resumed job's rate starts there.
    group.out = self

  @classmethod
  def on(cls, group):
    """A bar that takes over `group`'s output, where that is a terminal; else None."""
    isatty = getattr(group.out, "isatty", None)
    if not (isatty and isatty() and group.mailbox) or importlib.util.find_spec("tqdm") is None:
      return None
    return cls(group)

  def write(self, text):
    with self._tqdm.external_write_mode(file=self._out):
      self._out.write(text)

  def flush(self):
    self._out.flush()

  def show(self, step, last, details):
    """The job at global `step` of `last`; `details`: the rest of the line."""
    if self._bar is None:
      self._bar = self._tqdm(desc="training", unit="step", file=self._out, initial=step,
                             total=last, dynamic_ncols=True, leave=False)
    self._bar.total = last
    self._bar.update(max(step - self._bar.n, 0))
    self._bar.set_postfix_str(details)

  def close(self):
    if self._bar is not None:
      self._bar.close()
    self._group.out = self._out
