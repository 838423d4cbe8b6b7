"""The one-line training summary the chief prints and the launcher collects."""

PREFIX = "estimator_dist summary:"


def format_line(fields):
  return PREFIX + " " + " ".join(f"{k}={v}" for k, v in fields.items())


def parse_line(line):
  """The fields of a summary line, or None if `line` is not one."""
  start = line.find(PREFIX)
  if start < 0:
    return None
  return dict(kv.split("=", 1) for kv in line[start + len(PREFIX):].split())


def format_table(fields):
  return "\n".join(f"  {k:14s} {v}" for k, v in fields.items())
