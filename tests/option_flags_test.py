"""Flags made from an options dataclass's fields, and the dataclass made from them."""

import dataclasses
from typing import Optional

import numpy
import pytest
from absl import flags

from estimator_dist import errors
from estimator_dist import launch
from estimator_dist import option_flags
from estimator_dist.jobs import horovodrun
from estimator_dist.engines import slurm_options
from estimator_dist.experiments import sweep_options
from estimator_dist.jobs import launch_options
from estimator_dist.option_flags import option
from estimator_dist.outputs import best_checkpoints
from estimator_dist.task import early_stopping_options
from estimator_dist.training import options as options_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class Toy:
  steps: int = option(10, kind="integer", lower_bound=1, help="Steps.")
  mode: str = option("fast", kind="enum", values=("fast", "slow"), help="How.")
  rate: float = option(0.5, kind="float", name="toy_rate", help="Rate.")
  tags: tuple = option((), kind="list", help="Tags.")
  ask: bool = option(False, kind="bool", flag_default=None, help="Decided later when unset.")
  label: Optional[str] = None  # No flag: the program sets it.

  def __post_init__(self):
    if self.mode == "slow" and self.steps > 100:
      raise errors.ConfigError(f"--steps={self.steps} is too many for --mode=slow.")


def parse(*argv):
  values = flags.FlagValues()
  holders = option_flags.define_flags(Toy, flag_values=values, helps={"mode": "Which way."})
  values(["program", *argv])
  return values, holders


def test_each_field_with_a_flag_defines_it_with_its_default_kind_and_help():
  values, holders = parse()
  assert list(holders) == ["steps", "mode", "rate", "tags", "ask"]
  assert [values[name].flag_type() for name in ("steps", "mode", "toy_rate", "tags", "ask")] \
      == ["int", "string enum", "float", "comma separated list of strings", "bool"]
  assert values["steps"].default == 10 and values["steps"].parser.lower_bound == 1
  assert values["ask"].default is None  # The flag's own default.
  assert values["mode"].help == "<fast|slow>: Which way."
  assert "label" not in values


def test_the_options_are_made_from_the_parsed_flags():
  _, holders = parse("--steps=20", "--mode=slow", "--toy_rate=2", "--tags=a,b", "--ask")
  toy = option_flags.options_from_flags(Toy, holders, label="x")
  assert toy == Toy(steps=20, mode="slow", rate=2.0, tags=["a", "b"], ask=True, label="x")


def test_the_options_check_the_values_and_name_the_flag():
  _, holders = parse("--steps=200", "--mode=slow")
  with pytest.raises(errors.ConfigError, match="--steps=200"):
    option_flags.options_from_flags(Toy, holders)


@pytest.mark.parametrize("options, message", [
    # Each once checked by hand beside its declaration, or (SLURM's) not at all: the
    # script then carried it to a job whose watcher refused it on the cluster.
    (lambda: slurm_options.SlurmOptions(hang_timeout_secs=-1),
     "--hang_timeout_secs (-1) must be a non-negative integer."),
    (lambda: slurm_options.SlurmOptions(port_base=70000),
     "--port_base (70000) must be an integer from 1 to 65000."),
    (lambda: launch_options.LaunchOptions(progress_secs=float("nan")),
     "--progress_secs (nan) must be a non-negative number."),
    (lambda: launch_options.LaunchOptions(max_restarts=True),
     "--max_restarts (True) must be a non-negative integer."),
    (lambda: launch_options.LaunchOptions(terminal="loud"),
     "--terminal ('loud') must be one of quiet, default, all."),
    (lambda: options_lib.TrainOptions(model_dir="/m", train_steps=None),
     "--train_steps (None) must be a positive integer."),
    (lambda: sweep_options.SweepOptions(space="a=choice(1,2)", sweep_dir="/s", parallel=0),
     "--parallel (0) must be a positive integer."),
    (lambda: early_stopping_options.EarlyStopping(patience_steps=None),
     "--early_stopping_patience_steps (None) must be a positive integer."),
    (lambda: best_checkpoints.BestCheckpoints(keep=0),  # Its flag's 0 is "none".
     "--keep_best_checkpoints (0) must be a positive integer."),
])
def test_what_a_flag_declares_is_checked_for_a_library_caller_too(options, message):
  with pytest.raises(errors.ConfigError) as raised:
    options()
  assert str(raised.value) == message
  # None where the default is None (decided later), and the defaults themselves, pass.
  slurm_options.SlurmOptions(nodes=None)
  options_lib.TrainOptions(model_dir="/m", train_steps=5, eval_timeout_secs=None,
                           learning_rate=numpy.float32(0.1), random_seed=numpy.int64(3))


def test_a_flag_of_an_unknown_kind_or_an_enum_without_values_is_refused():
  with pytest.raises(TypeError, match="kind"):
    option_flags.OptionFlag(kind="number", help="?")
  with pytest.raises(TypeError, match="enum"):
    option_flags.OptionFlag(kind="enum", help="?")


def test_the_launchers_flags_give_its_options():
  values = flags.FlagValues()
  launch_flags = launch.define_flags(values)
  values(["launch"])
  assert launch_flags.options() == launch_options.LaunchOptions()
  values = flags.FlagValues()
  launch_flags = launch.define_flags(values)
  values(["launch", "--num_workers=3", "--elastic", "--hosts=a:2", "--max_restarts=2",
          "--horovodrun_args=--cycle-time-ms=2", "--host_discovery_script=/d.sh"])
  assert launch_flags.options() == launch_options.LaunchOptions(
      max_restarts=2, horovod=horovodrun.HorovodRun(
          hosts="a:2", extra_args="--cycle-time-ms=2", elastic=horovodrun.Elastic(
              min_workers=1, max_workers=3, discovery_script="/d.sh")))


def test_a_program_gives_its_own_defaults_and_finds_the_holders_again():
  values = flags.FlagValues()
  option_flags.define_flags(Toy, flag_values=values, defaults={"steps": 7})
  values(["program", "--toy_rate=3"])
  holders = option_flags.holders_of(Toy, values)
  assert option_flags.values_of(holders) == {"steps": 7, "mode": "fast", "rate": 3.0,
                                             "tags": [], "ask": None}
