"""Population-based training's options and values: the first values, and perturbation.

The first values of each member are drawn at random from the space (seeded). A member that
exploits another takes its values, perturbed (explore): a continuous value times 0.8 or
1.2, an integer the same (moved by one at least), a choice one of its neighbours in the
list; always within the space's bounds. Values that shape the model's variables (layer
sizes, the optimizer) are named in --pbt_keep: the exploiter takes them unchanged, since a
checkpoint of another shape cannot be restored.
"""

import math
import random

import optuna

from estimator_dist import errors

SCHEDULERS = ("none", "pbt")
FACTORS = (0.8, 1.2)
MEMBER, GENERATION = "pbt_member", "pbt_generation"  # A segment's trial's user attributes.


def check(options):
  """ConfigError for options PBT cannot run with (`study.SweepOptions`)."""
  if options.scheduler != "pbt":
    given = [f"--{name}" for name, is_set in (
        ("population", options.population is not None),
        ("pbt_interval_steps", options.pbt_interval_steps is not None),
        ("pbt_quantile", options.pbt_quantile != 0.25), ("pbt_keep", bool(options.pbt_keep)))
             if is_set]
    if given:
      raise errors.ConfigError(f"{' and '.join(given)} apply to --scheduler=pbt.")
    return
  if options.population is None or options.population < 2:
    raise errors.ConfigError(f"--scheduler=pbt needs --population of at least 2 (got "
                             f"{options.population}): the members that train side by side.")
  if options.pbt_interval_steps is None or options.pbt_interval_steps < 1:
    raise errors.ConfigError(f"--scheduler=pbt needs --pbt_interval_steps of at least 1 (got "
                             f"{options.pbt_interval_steps}): the steps between exploits.")
  if not 0 < options.pbt_quantile <= 0.5:
    raise errors.ConfigError(f"--pbt_quantile ({options.pbt_quantile:g}) must be above 0 and "
                             f"at most 0.5: the bottom share that copies the top share.")
  unknown = sorted(set(options.pbt_keep) - set(options.search_space))
  if unknown:
    raise errors.ConfigError(f"--pbt_keep names {unknown}, which the space does not have.")
  if options.pruner != "none" or options.fixed_points:
    raise errors.ConfigError(
        "--scheduler=pbt draws its members' first values itself and stops none of them: "
        "drop --pruner, --sampler=grid and --zip.")


def first_values(space, rng: random.Random):
  """Values drawn at random from `space` ({name: optuna distribution})."""
  values = {}
  for name, d in sorted(space.items()):
    if isinstance(d, optuna.distributions.CategoricalDistribution):
      values[name] = rng.choice(d.choices)
    elif d.log:
      drawn = math.exp(rng.uniform(math.log(d.low), math.log(d.high)))
      values[name] = min(d.high, max(d.low, round(drawn))) if _is_int(d) else drawn
    else:
      values[name] = rng.randint(d.low, d.high) if _is_int(d) else rng.uniform(d.low, d.high)
  return values


def perturbed(values, space, rng: random.Random, keep=()):
  """`values` explored: each moved as the module says, within its bounds, but those
  named in `keep` (values that shape the model's variables: a checkpoint of another
  shape cannot be restored)."""
  moved = {}
  for name, value in sorted(values.items()):
    d = space[name]
    if name in keep:
      moved[name] = value
      continue
    if isinstance(d, optuna.distributions.CategoricalDistribution):
      index = d.choices.index(value)
      neighbours = [i for i in (index - 1, index + 1) if 0 <= i < len(d.choices)]
      moved[name] = d.choices[rng.choice(neighbours)] if neighbours else value
      continue
    factor = rng.choice(FACTORS)
    if _is_int(d):
      step = round(value * factor) - value or (1 if factor > 1 else -1)
      moved[name] = int(min(d.high, max(d.low, value + step)))
    else:
      moved[name] = min(d.high, max(d.low, value * factor))
  return moved


def _is_int(distribution):
  return isinstance(distribution, optuna.distributions.IntDistribution)
