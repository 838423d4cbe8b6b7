"""The chief's summary of a job: its record for the launcher and its printed line."""

from absl import logging

from estimator_dist import command_line
from estimator_dist.contract import summary


def print_summary(adapter, steps, examples_per_step, steps_per_sec, metrics):
  """The chief's summary: its record for the launcher and its line; returns its fields."""
  fields = {"strategy": adapter.name, "workers": adapter.task.size,
            "replicas": adapter.num_replicas, "steps": steps,
            **({"global_batch": examples_per_step} if examples_per_step else {})}
  if steps_per_sec:
    fields["steps/sec"] = f"{steps_per_sec:.2f}"
    if examples_per_step:
      fields["examples/sec"] = f"{steps_per_sec * examples_per_step:.1f}"
  for key in ("accuracy", "loss"):
    if key in metrics:
      fields[f"eval_{key}"] = f"{float(metrics[key]):.4f}"
  summary.write_record(fields, warn=_warn)  # The launcher's: no printed line forges it.
  print(summary.format_line(fields), flush=True)
  return fields


def _warn(message):
  logging.warning(command_line.line("%s"), message)
