"""Horovod's options and the environment hvd.init() reads from them."""

import dataclasses
import os
from typing import Optional

from estimator_dist import errors
from estimator_dist.strategies import options as options_lib

REDUCTIONS = ("average", "sum", "adasum")
COMPRESSIONS = ("none", "fp16")
# Environment defaults for ranks that train on CPUs (an environment value wins), measured
# with benchmarks/compare_strategies.py; see docs/performance-results.md.
CPU_DEFAULTS = {
    # Open MPI's shared-memory transport busy-polls while a rank waits for its peers;
    # on CPUs that poll takes the core from the rank's own computation.
    "OMPI_MCA_mpi_yield_when_idle": "1",
    # A tensor larger than the fusion buffer is all-reduced in place. Fusing a CPU tensor
    # copies it in and out of the buffer, which for megabytes costs more than the
    # per-message latency fusion saves; small tensors are still fused.
    "HOROVOD_FUSION_THRESHOLD": str(8 * 1024 * 1024),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class HorovodOptions(options_lib.Options):
  """Horovod's options, each told by its flag's help (and strategies.accumulation)."""
  compression: str = options_lib.option("none", name="hvd_compression", kind="enum",
                                        values=COMPRESSIONS, help="gradient compression.")
  reduction: str = options_lib.option("average", name="hvd_reduction", kind="enum",
                                      values=REDUCTIONS, help="how gradients are combined.")
  backward_passes_per_step: int = options_lib.option(
      1, kind="integer", lower_bound=1,
      help="micro-batches accumulated per all-reduce.")
  gradient_predivide_factor: float = options_lib.option(
      1.0, kind="float",
      help="divide gradients by this before the sum, the rest after.")
  global_batch_size: Optional[int] = options_lib.option(
      None, kind="integer", lower_bound=1,
      help="examples per update, whatever the number of ranks; each rank accumulates "
      "micro-batches of --batch_size.")
  batch_size: Optional[int] = None  # global_batch_size's micro-batch (from --batch_size).
  timeline: Optional[str] = options_lib.option(
      None, name="hvd_timeline", kind="string",
      help="write Horovod's timeline (a Chrome trace, JSON) to this file; rank 0 writes it, "
      "under any engine.")
  autotune: bool = options_lib.option(
      False, name="hvd_autotune", kind="bool",
      help="let Horovod tune its fusion buffer and cycle time while it trains.")

  def __post_init__(self):
    super().__post_init__()
    errors.check_choice("compression", self.compression, COMPRESSIONS)
    errors.check_choice("reduction", self.reduction, REDUCTIONS)
    errors.check_positive("backward_passes_per_step", self.backward_passes_per_step)
    factor = self.gradient_predivide_factor
    if factor <= 0:
      raise errors.ConfigError(f"gradient_predivide_factor ({factor}) must be > 0.")
    if factor != 1.0 and self.reduction != "average":
      raise errors.ConfigError(
          f"--gradient_predivide_factor ({factor}) needs --hvd_reduction=average: it works "
          f"only with reduction='average', not {self.reduction!r}.")
    if self.global_batch_size is not None and (
        self.backward_passes_per_step != 1 or self.reduction != "average" or
        factor != 1.0 or self.batch_size is None):
      raise errors.ConfigError(
          f"global_batch_size ({self.global_batch_size}) needs batch_size, the micro-batch, "
          f"and sets the passes per update itself: drop backward_passes_per_step, "
          f"gradient_predivide_factor and reduction={self.reduction!r}.")


def set_environment(options, *, on_cpus):
  """Sets what hvd.init() reads, whatever started the ranks: the CPU defaults (unless the
  environment has them), the timeline's file and autotuning."""
  if on_cpus:
    for name, value in CPU_DEFAULTS.items():
      os.environ.setdefault(name, value)
  if options.timeline:
    os.environ["HOROVOD_TIMELINE"] = os.path.abspath(options.timeline)
  if options.autotune:
    os.environ["HOROVOD_AUTOTUNE"] = "1"
