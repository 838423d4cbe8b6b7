"""Program flags: validators for rules that span flags, and the options they give."""

import pytest
import tensorflow as tf
from absl import flags

import estimator_dist as ed
from estimator_dist.training import flags as task_flags


def parse(*argv):
  values = flags.FlagValues()
  ed.define_flags(values)
  values(["program", *argv])
  return values


def test_defaults_give_a_local_run():
  options = ed.options_from_flags(parse("--model_dir=/tmp/m"))
  assert options.strategy == "local" and options.model_dir == "/tmp/m"
  assert dict(options.strategy_options) == {"intra_op_threads": 0, "inter_op_threads": 0,
                                         "cpu_affinity": "auto"}


def test_backend_options_reach_their_strategy():
  options = ed.options_from_flags(parse(
      "--model_dir=/m", "--strategy=horovod", "--hvd_compression=fp16", "--hvd_reduction=sum",
      "--backward_passes_per_step=2", "--learning_rate=0.5", "--lr_scaling=sqrt",
      "--warmup_steps=10", "--batch_size=16"))
  assert dict(options.strategy_options) == {
      "intra_op_threads": 0, "inter_op_threads": 0, "cpu_affinity": "auto", "compression": "fp16",
      "reduction": "sum", "backward_passes_per_step": 2, "gradient_predivide_factor": 1.0}
  assert (options.learning_rate, options.lr_scaling, options.warmup_steps,
          options.batch_size) == (0.5, "sqrt", 10, 16)


def test_alias_and_communication():
  options = ed.options_from_flags(parse(
      "--model_dir=/m", "--strategy=collective_all_reduce", "--communication=ring"))
  assert options.strategy == "multi_worker"
  assert options.strategy_options["communication"] == "ring"


@pytest.mark.parametrize("argv,message", [
    (["--strategy=mirrored", "--hvd_compression=fp16"],
     "--hvd_compression applies only to --strategy=horovod"),
    (["--strategy=horovod", "--num_devices=2"], "--num_devices applies only to --strategy=mirrored"),
    (["--warmup_steps=100", "--train_steps=50"], "--warmup_steps must be smaller than"),
    (["--strategy=horovod", "--hvd_reduction=sum", "--gradient_predivide_factor=2"],
     "--gradient_predivide_factor needs --hvd_reduction=average"),
    (["--strategy=spark"], "value should be one of"),
    (["--batch_size=0"], "0 is not a positive integer"),
])
def test_flags_that_cannot_work_are_refused(argv, message):
  with pytest.raises(flags.IllegalFlagValueError, match=message):
    parse(*argv)


def test_model_dir_is_required():
  with pytest.raises(ed.ConfigError, match="--model_dir is required"):
    ed.options_from_flags(parse())


def test_our_error_raised_inside_autograph_is_reported_as_ours():
  """A strategy runs the model_fn through AutoGraph, which re-raises a ConfigError as a
  StagingError holding its message; the program still ends with our one line, exit 2."""
  @tf.function
  def model_fn():
    raise ed.ConfigError("no learning rate was found to scale")
  with pytest.raises(Exception) as raised:
    model_fn()
  assert not isinstance(raised.value, ed.ConfigError)  # AutoGraph's own wrapper.
  assert task_flags._ours(raised.value) == (  # pylint: disable=protected-access
      ed.ConfigError, "no learning rate was found to scale")
