"""How each member of a PBT population goes on into a generation: a function of the
results of the generation before and the seed, so that a sweep run again plans the same.

The members are ranked by their result, the better first (ties: the lower member first).
Each of the bottom `count` (quantile of the population, at least one) and each that
diverged takes one of the top `count` members' checkpoint and goes on with its values
perturbed; the others go on with their own. `sure_to_keep` tells, before every result is
in, the members that go on with their own values whatever the missing results are.
"""

import random

from estimator_dist.experiments import pbt_values
from estimator_dist.experiments import trial_job


def first(options):
  """[(values, None)] of each member for generation 0."""
  seed, space = options.seed or 0, options.search_space
  return [(pbt_values.first_values(space, random.Random(f"{seed}/first/{m}")), None)
          for m in range(options.population)]


def plans(results, options, generation):
  """[(values, the member exploited or None)] of each member for `generation`, from
  `results`: each member's finished trial of the generation before."""
  size, space = options.population, options.search_space
  scored = [m for m in range(size) if results[m].value is not None]  # Else it diverged.
  scored.sort(key=lambda m: results[m].value, reverse=options.direction == "maximize")
  count = _count(options)
  top = scored[:count]
  if not top:
    raise trial_job.TrialFailed(f"every member of the population diverged in generation "
                                f"{generation - 1}; no checkpoint is left to go on from.")
  bottom = set(scored[count:][-count:]) | (set(range(size)) - set(scored))
  rng = random.Random(f"{options.seed or 0}/{generation}")
  made = []
  for member in range(size):
    if member in bottom:
      source = rng.choice(top)
      made.append((pbt_values.perturbed(results[source].params, space, rng,
                                        keep=options.pbt_keep), source))
    else:
      made.append((results[member].params, None))
  return made


def sure_to_keep(results, options):
  """The members that go on with their own values (and are no top member, whose
  checkpoint another may take) whatever the results still missing in `results` (each
  member's finished trial, or None): at least `count` members known to rank before each,
  and `count` scored ones after."""
  known = [(m, r.value) for m, r in enumerate(results) if r is not None and r.value is not None]
  maximize, count = options.direction == "maximize", _count(options)

  def before(a, b):  # (member, value) a ranks before b.
    return (a[1] > b[1] if maximize else a[1] < b[1]) or (a[1] == b[1] and a[0] < b[0])
  return [k[0] for k in known if sum(before(j, k) for j in known) >= count and
          sum(before(k, j) for j in known) >= count]


def _count(options):
  return max(1, int(options.population * options.pbt_quantile))
