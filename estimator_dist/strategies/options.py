"""The options of the adapters, without TensorFlow: every adapter's (`Options`) and the
TensorFlow backends' own (Horovod's are in `horovod_options`).

The training flags are made from them (`training.flags`), so a command's --help lists
them where TensorFlow is not installed; `factory.options_class` finds a strategy's. Each
adapter takes its own as `Adapter.Options`.
"""

import dataclasses
from typing import Optional

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.task import placement

# An option's flag is declared beside it, in its field (option_flags); kept here as the
# backends' options name them.
OptionFlag = option_flags.OptionFlag
FLAG = option_flags.FLAG
option = option_flags.option

# multi_worker's collective implementations (tf.distribute's CommunicationImplementation).
COMMUNICATIONS = ("auto", "ring", "nccl")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
  """Options every adapter takes; each field's flag says what it does."""
  intra_op_threads: int = option(0, kind="integer", lower_bound=0,
                                 help="TensorFlow intra-op threads (0: TF default).")
  inter_op_threads: int = option(0, kind="integer", lower_bound=0,
                                 help="TensorFlow inter-op threads (0: TF default).")
  cpu_affinity: str = option(
      "auto", kind="enum", values=placement.CPU_AFFINITIES,
      help="auto: pin each training process that shares a host with others to its own "
      "share of the CPUs; none: leave placement to the OS.")

  def __post_init__(self):
    for name in ("intra_op_threads", "inter_op_threads"):
      errors.check_non_negative(name, getattr(self, name))
    errors.check_choice("cpu_affinity", self.cpu_affinity, placement.CPU_AFFINITIES)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MirroredOptions(Options):
  """num_devices: replicas on this machine (default: the GPUs, or the launcher's count)."""
  num_devices: Optional[int] = option(None, kind="integer",
                                      lower_bound=1, help="replicas on this machine.")

  def __post_init__(self):
    super().__post_init__()
    errors.check_positive("num_devices", self.num_devices, allow_none=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MultiWorkerOptions(Options):
  """communication: the collective implementation (auto, ring, nccl).
  collective_timeout_secs: seconds before a collective op fails (None: never).
  """
  communication: str = option("auto", kind="enum", values=COMMUNICATIONS,
                              help="collective implementation.")
  collective_timeout_secs: Optional[float] = option(
      None, kind="float",
      help="seconds before a collective op fails.")

  def __post_init__(self):
    super().__post_init__()
    errors.check_choice("communication", self.communication, COMMUNICATIONS)
    if self.collective_timeout_secs is not None and self.collective_timeout_secs <= 0:
      raise errors.ConfigError(
          f"collective_timeout_secs ({self.collective_timeout_secs}) must be positive.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ParameterServerOptions(Options):
  """ps_done_timeout_secs: how long a ps waits for the training tasks' end (None: ever).
  remote_cluster: train as a standalone client of these standard servers (a dict or its
    JSON: {"worker": [...], "ps": [...]}); TF_CONFIG must then be unset.
  """
  ps_done_timeout_secs: Optional[float] = None
  remote_cluster: Optional[object] = option(
      None, kind="string",
      help="train as a standalone client of standard TensorFlow servers, given as JSON: "
      "'{\"worker\": [...], \"ps\": [...]}'.")

  def __post_init__(self):
    super().__post_init__()
    if self.ps_done_timeout_secs is not None and self.ps_done_timeout_secs <= 0:
      raise errors.ConfigError(
          f"ps_done_timeout_secs ({self.ps_done_timeout_secs}) must be positive.")
