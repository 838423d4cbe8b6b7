"""A search space written as text: `learning_rate=loguniform(1e-4,1e-1) dropout=choice(0.3,0.5)`.

Each entry is NAME=KIND(ARGS), separated by spaces; NAME is the program's flag that takes
the value. The kinds, as Optuna distributions:
  uniform(low,high)     a float in [low, high]
  loguniform(low,high)  a float in [low, high], uniform in its logarithm (low > 0)
  int(low,high)         an integer in [low, high]
  logint(low,high)      an integer in [low, high], uniform in its logarithm (low > 0)
  choice(a,b,...)       one of the values (numbers, or words such as adam or sgd)
"""

import itertools
import re
from typing import Dict, List, Mapping

import optuna

from estimator_dist import errors

KINDS = ("uniform", "loguniform", "int", "logint", "choice")
_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([a-z]+)\((.*)\)$")
_EXAMPLE = "learning_rate=loguniform(1e-4,1e-1) dropout_rate=choice(0.3,0.5)"


def parse(text) -> Dict[str, optuna.distributions.BaseDistribution]:
  """{flag name: distribution} of a space's text; ConfigError naming the bad entry."""
  space = {}
  # Spaces inside an entry's parentheses do not split it: choice(0.3, 0.5).
  text = re.sub(r"\(([^)]*)\)", lambda m: "(" + "".join(m.group(1).split()) + ")", text or "")
  for entry in text.split():
    match = _ENTRY.match(entry)
    if not match:
      raise errors.ConfigError(
          f"--space entry {entry!r} is not NAME=KIND(ARGS); write e.g. '{_EXAMPLE}'.")
    name, kind, args = match.groups()
    if name in space:
      raise errors.ConfigError(f"--space names {name!r} twice; give each flag once.")
    space[name] = _distribution(entry, kind, [a for a in args.split(",") if a])
  if not space:
    raise errors.ConfigError(f"--space is empty; give the flags to search, e.g. '{_EXAMPLE}'.")
  return space


def _distribution(entry, kind, args):
  if kind not in KINDS:
    raise errors.ConfigError(f"--space entry {entry!r}: unknown distribution {kind!r}; use one "
                             f"of {', '.join(KINDS)}.")
  if kind == "choice":
    if not args:
      raise errors.ConfigError(f"--space entry {entry!r}: choice needs at least one value.")
    values = tuple(_value(a) for a in args)
    if len(set(values)) != len(values):
      raise errors.ConfigError(f"--space entry {entry!r}: a value is given twice.")
    return optuna.distributions.CategoricalDistribution(values)
  integer = kind in ("int", "logint")
  try:
    if len(args) != 2:
      raise ValueError
    low, high = (int(a) if integer else float(a) for a in args)
  except ValueError:
    number = "integers" if integer else "numbers"
    raise errors.ConfigError(f"--space entry {entry!r}: {kind} takes two {number}, "
                             f"{kind}(low,high).") from None
  log = kind.startswith("log")
  if low > high or (log and low <= 0):
    raise errors.ConfigError(f"--space entry {entry!r}: needs low <= high" +
                             (" and low > 0 (a logarithm)." if log else "."))
  if integer:
    return optuna.distributions.IntDistribution(low, high, log=log)
  return optuna.distributions.FloatDistribution(low, high, log=log)


def _value(text):
  for kind in (int, float):
    try:
      return kind(text)
    except ValueError:
      pass
  return text


def grid(space) -> Dict[str, List]:
  """The choice lists of a space whose every entry is a choice (for the grid sampler)."""
  ranges = [name for name, d in space.items()
            if not isinstance(d, optuna.distributions.CategoricalDistribution)]
  if ranges:
    raise errors.ConfigError(
        f"--sampler=grid takes choice(...) entries only; {', '.join(ranges)} is a range. "
        f"List its values with choice(...), or use --sampler=random or tpe.")
  return {name: list(d.choices) for name, d in space.items()}


def zipped(space) -> List[Dict]:
  """--zip: the i-th trial takes the i-th value of every choice list (equal lengths)."""
  lists = grid(space)
  lengths = {name: len(values) for name, values in lists.items()}
  if len(set(lengths.values())) != 1:
    raise errors.ConfigError(f"--zip pairs the i-th values of every choice list, so the lists "
                             f"must be as long as each other; their lengths are {lengths}.")
  return [dict(zip(lists, values)) for values in zip(*lists.values())]


def product(space) -> List[Dict]:
  """Every combination of a grid space's values."""
  lists = grid(space)
  return [dict(zip(lists, values)) for values in itertools.product(*lists.values())]


def as_flags(params: Mapping) -> List[str]:
  """A trial's values as the program's flags: ['--learning_rate=0.003', ...]."""
  return [f"--{name}={value}" for name, value in sorted(params.items())]
