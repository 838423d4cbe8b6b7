"""How the decorator sets the learning rate (`RateOptions`), without TensorFlow: the
training flags offer its scalings (`decorator` scales the rate)."""

import dataclasses
from typing import Optional

from estimator_dist import errors

LR_SCALINGS = ("linear", "sqrt", "none")


@dataclasses.dataclass(frozen=True)
class RateOptions:
  """How the decorator sets the learning rate.

  lr_scaling: "linear", "sqrt" or "none"; None: linear for synchronous strategies and
    none for asynchronous parameter servers.
  warmup_steps: steps over which the rate rises linearly from the base rate to the
    scaled rate.
  lr_param: the key of `params` that holds the base learning rate.
  """
  lr_scaling: Optional[str] = None
  warmup_steps: int = 0
  lr_param: str = "learning_rate"

  def __post_init__(self):
    if self.lr_scaling is not None:
      errors.check_choice("lr_scaling", self.lr_scaling, LR_SCALINGS)
    errors.check_non_negative("warmup_steps", self.warmup_steps)
