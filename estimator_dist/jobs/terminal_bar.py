"""On a terminal, the job's progress as a live bar under the tasks' lines (tqdm).

  training:  60%|██████▏   | 1200/2000 [01:20<00:53, 14.9step/s, 954 examples/s, eval accuracy 0.971 @1000]

The launcher's output goes through the bar (`write`), which tqdm clears and draws again
around each line, so the lines of the tasks scroll above it. Only when the launcher's
output is a terminal and tqdm is installed; elsewhere the progress lines say the same.
"""

import importlib.util


class TerminalBar:
  """A tqdm bar at the bottom of the terminal `out`; a stream for the job's lines."""

  def __init__(self, out):
    from tqdm import tqdm  # pylint: disable=g-import-not-at-top
    self._tqdm, self._out = tqdm, out
    self._bar = tqdm(desc="training", unit="step", file=out, dynamic_ncols=True, leave=False)

  @classmethod
  def on(cls, group):
    """A bar that takes over `group`'s output, where that is a terminal; else None."""
    isatty = getattr(group.out, "isatty", None)
    if not (isatty and isatty()) or importlib.util.find_spec("tqdm") is None:
      return None
    bar = cls(group.out)
    group.out = bar
    return bar

  def write(self, text):
    with self._tqdm.external_write_mode(file=self._out):
      self._out.write(text)

  def flush(self):
    self._out.flush()

  def show(self, step, last, details):
    """The job at global `step` of `last`; `details`: the rest of the line."""
    self._bar.total = last
    self._bar.update(max(step - self._bar.n, 0))
    self._bar.set_postfix_str(details)

  def close(self):
    self._bar.close()
