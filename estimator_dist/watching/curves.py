"""The job's curves, drawn by the launcher with its summary: model_dir/curves.png.

Against the global step: the training loss with the evaluations' loss, the other eval
metrics, and the training rate (steps per second, as Estimator logs it). They are read
back from the event files the job wrote (`outputs.event_files`, what TensorBoard shows) and
drawn with matplotlib (`pip install estimator_dist[charts]`) once every task has exited,
so they take no time from the program. Without matplotlib, or for a model_dir on a remote
file system, the launcher says why in one line; a job that wrote no summary draws nothing.
"""

import os

from estimator_dist.contract import checkpoint_names

FILE_NAME = "curves.png"


def draw(model_dir):
  """Draws model_dir/curves.png; returns a line that names it, or says why it was not
  (None when the job wrote no summary)."""
  if checkpoint_names.is_url(model_dir):
    return f"no {FILE_NAME}: the model_dir is on a remote file system"
  try:
    from estimator_dist.outputs import event_files  # pylint: disable=g-import-not-at-top
    training, evaluations = event_files.scalars(model_dir), event_files.eval_metrics(model_dir)
    if not training and not evaluations:
      return None
    try:
      from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top
    except ImportError:
      return (f"no {FILE_NAME}: matplotlib is not installed "
              f"(pip install estimator_dist[charts])")
    return f"the job's curves: {_draw(Figure, model_dir, training, evaluations)}"
  except Exception as e:  # pylint: disable=broad-except
    return f"no {FILE_NAME}: {type(e).__name__}: {e}"  # A chart never fails a job.


def _draw(Figure, model_dir, training, evaluations):  # pylint: disable=invalid-name
  metrics = sorted({m for values in evaluations.values() for m in values} - {"loss", "global_step"})
  figure = Figure(figsize=(6 * (2 + bool(metrics)), 4), layout="constrained")
  panels = figure.subplots(1, 2 + bool(metrics), squeeze=False)[0]
  _plot(panels[0], training, "loss", "training loss")
  _plot(panels[0], evaluations, "loss", "eval loss", marker="o")
  panels[0].set_title("loss")
  if all(v > 0 for line in panels[0].get_lines() for v in line.get_ydata()):
    panels[0].set_yscale("log")
  if metrics:
    for metric in metrics:
      _plot(panels[1], evaluations, metric, f"eval {metric}", marker="o")
    panels[1].set_title("evaluations")
  _plot(panels[-1], training, "global_step/sec", "steps/s")
  panels[-1].set_title("training rate")
  path = os.path.join(model_dir, FILE_NAME)
  figure.savefig(path, dpi=100)
  return path


def _plot(axes, values, tag, label, **style):
  points = [(step, scalars[tag]) for step, scalars in values.items() if tag in scalars]
  if points:
    axes.plot(*zip(*points), label=label, **style)
    axes.set_xlabel("global step")
    axes.legend()
