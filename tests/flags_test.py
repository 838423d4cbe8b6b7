"""Program flags: validators for rules that span flags, and the options they give."""

import dataclasses
import inspect
import re

import pytest
import tensorflow as tf
from absl import flags

import estimator_dist as ed
from estimator_dist.training import flags as task_flags
from estimator_dist.training import options as options_lib
from estimator_dist.training import program


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


def test_a_jobs_task_gets_its_strategy_and_model_dir_from_its_environment(monkeypatch):
  """The engines run a program's command as given and name the job's strategy (and the
  launcher its model_dir) in the task's environment: they are the flags' defaults."""
  monkeypatch.setenv("ESTIMATOR_DIST_STRATEGY", "collective_all_reduce")
  monkeypatch.setenv("ESTIMATOR_DIST_MODEL_DIR", "/shared/job")
  values = parse()
  assert task_flags.TrainingFlags.of(values).started_by_an_engine()
  options = ed.options_from_flags(values)
  assert (options.strategy, options.model_dir) == ("multi_worker", "/shared/job")
  # The program's own --model_dir wins; a --strategy that contradicts the job is refused.
  assert ed.options_from_flags(parse("--model_dir=/mine")).model_dir == "/mine"
  assert ed.options_from_flags(parse("--strategy=multi_worker")).strategy == "multi_worker"
  with pytest.raises(ed.ConfigError, match=r"the program was given --strategy=horovod, but "
                     r"its job runs collective_all_reduce .* drop --strategy"):
    ed.options_from_flags(parse("--strategy=horovod"))
  monkeypatch.setenv("ESTIMATOR_DIST_STRATEGY", "ring")
  with pytest.raises(ed.ConfigError, match=r"ESTIMATOR_DIST_STRATEGY='ring' is not a strategy"):
    parse()


def test_outside_a_job_nothing_is_started_unless_the_command_line_asks():
  assert not task_flags.TrainingFlags.of(parse()).started_by_an_engine()
  assert task_flags.TrainingFlags.of(parse("--strategy=local")).started_by_an_engine()


def test_flags_the_program_defined_already_are_used_as_they_are():
  """TensorFlow's official models define --model_dir and --batch_size themselves."""
  values = flags.FlagValues()
  flags.DEFINE_string("model_dir", "/official", "Where the model goes.", flag_values=values)
  flags.DEFINE_integer("batch_size", 128, "Batch size.", flag_values=values)
  ed.define_flags(values)
  ed.define_flags(values)  # Twice is harmless too.
  values(["program", "--batch_size=8"])
  options = ed.options_from_flags(values)
  assert (options.model_dir, options.batch_size) == ("/official", 8)
  assert values["model_dir"].help == "Where the model goes."


def test_a_program_flag_of_another_kind_is_one_error_naming_both():
  values = flags.FlagValues()
  flags.DEFINE_string("batch_size", "32", "Batch size.", flag_values=values)
  with pytest.raises(ed.ConfigError, match=(
      r"^--batch_size is defined twice: by .+ \(string\) and by "
      r"estimator_dist.define_flags\(\) \(int\); rename the program's flag, or give it "
      r"the kind int, and estimator_dist uses it.$")):
    ed.define_flags(values)


def test_backend_options_reach_their_strategy():
  options = ed.options_from_flags(parse(
      "--model_dir=/m", "--strategy=horovod", "--hvd_compression=fp16", "--hvd_reduction=sum",
      "--backward_passes_per_step=2", "--learning_rate=0.5", "--lr_scaling=sqrt",
      "--warmup_steps=10", "--batch_size=16"))
  assert dict(options.strategy_options) == {
      "intra_op_threads": 0, "inter_op_threads": 0, "cpu_affinity": "auto", "compression": "fp16",
      "reduction": "sum", "backward_passes_per_step": 2, "gradient_predivide_factor": 1.0,
      "autotune": False}
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
    (["--strategy=spark"], "value should be one of"),
    (["--batch_size=0"], "0 is not a positive integer"),
])
def test_flags_that_cannot_work_are_refused(argv, message):
  with pytest.raises(flags.IllegalFlagValueError, match=message):
    parse(*argv)


@pytest.mark.parametrize("argv,message", [
    (["--warmup_steps=100", "--train_steps=50"],
     r"warmup_steps \(100\) must be smaller than train_steps \(50\): lower --warmup_steps"),
    (["--strategy=horovod", "--hvd_reduction=sum", "--gradient_predivide_factor=2"],
     r"--gradient_predivide_factor \(2.0\) needs --hvd_reduction=average"),
    (["--exporters=latest,newest"], r"--exporters takes latest, best, final .*'newest'"),
])
def test_values_that_cannot_work_together_are_refused_by_the_options_naming_the_flags(
    argv, message):
  with pytest.raises(ed.ConfigError, match=message):
    ed.options_from_flags(parse("--model_dir=/m", *argv))


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
  assert program._ours(raised.value) == (  # pylint: disable=protected-access
      ed.ConfigError, "no learning rate was found to scale")


# The backend flags as they were listed by hand before they were made from the options
# dataclasses: name, type, default, help, enum values, lower bound.
BACKEND_FLAGS = [
    ("intra_op_threads", "int", 0, "TensorFlow intra-op threads (0: TF default).", None, 0),
    ("inter_op_threads", "int", 0, "TensorFlow inter-op threads (0: TF default).", None, 0),
    ("cpu_affinity", "string enum", "auto", "auto: pin each training process that shares a host with "
     "others to its own share of the CPUs; none: leave placement to the OS.", ["auto", "none"],
     None),
    ("num_devices", "int", None, "mirrored: replicas on this machine.", None, 1),
    ("communication", "string enum", "auto", "multi_worker: collective implementation.",
     ["auto", "ring", "nccl"], None),
    ("collective_timeout_secs", "float", None,
     "multi_worker: seconds before a collective op fails.", None, None),
    ("hvd_compression", "string enum", "none", "horovod: gradient compression.", ["none", "fp16"],
     None),
    ("hvd_reduction", "string enum", "average", "horovod: how gradients are combined.",
     ["average", "sum", "adasum"], None),
    ("backward_passes_per_step", "int", 1, "horovod: micro-batches accumulated per all-reduce.",
     None, 1),
    ("gradient_predivide_factor", "float", 1.0,
     "horovod: divide gradients by this before the sum, the rest after.", None, None),
    ("global_batch_size", "int", None, "horovod: examples per update, whatever the number of "
     "ranks; each rank accumulates micro-batches of --batch_size.", None, 1),
    ("hvd_timeline", "string", None, "horovod: write Horovod's timeline (a Chrome trace, "
     "JSON) to this file; rank 0 writes it, under any engine.", None, None),
    ("hvd_autotune", "bool", False, "horovod: let Horovod tune its fusion buffer and cycle "
     "time while it trains.", None, None),
    ("remote_cluster", "string", None, "parameter_server: train as a standalone client of "
     "standard TensorFlow servers, given as JSON: '{\"worker\": [...], \"ps\": [...]}'.", None,
     None),
]


def test_backend_flags_are_made_from_the_options_as_they_were_listed():
  values = flags.FlagValues()
  defined = ed.define_flags(values)
  assert [b.holder.name for b in defined.backend] == [
      "intra_op_threads", "inter_op_threads", "cpu_affinity", "num_devices", "communication",
      "collective_timeout_secs", "remote_cluster", "hvd_compression", "hvd_reduction",
      "backward_passes_per_step", "gradient_predivide_factor", "global_batch_size",
      "hvd_timeline", "hvd_autotune"]
  for name, kind, default, help_text, enum_values, lower_bound in BACKEND_FLAGS:
    flag = values[name]
    if enum_values:  # absl puts the values in front of an enum's help.
      help_text = f"<{'|'.join(enum_values)}>: {help_text}"
    assert (flag.flag_type(), flag.default, flag.help) == (kind, default, help_text), name
    assert getattr(flag.parser, "enum_values", None) == enum_values, name
    assert getattr(flag.parser, "lower_bound", None) == lower_bound, name


@pytest.mark.parametrize("argument,owner", [
    ("--num_devices=2", "mirrored"),
    ("--communication=ring", "multi_worker"),
    ("--collective_timeout_secs=5", "multi_worker"),
    ("--hvd_compression=fp16", "horovod"),
    ("--hvd_reduction=sum", "horovod"),
    ("--backward_passes_per_step=2", "horovod"),
    ("--gradient_predivide_factor=2", "horovod"),
    ("--global_batch_size=64", "horovod"),
    ('--remote_cluster={"worker": ["h:1"], "ps": ["h:2"]}', "parameter_server"),
])
def test_a_backend_flag_applies_only_to_its_strategy(argument, owner):
  name = argument.split("=")[0]
  parse("--strategy=" + owner, argument)  # Its own strategy takes it.
  for other in ed.STRATEGIES:
    if other != owner:
      with pytest.raises(flags.IllegalFlagValueError, match=re.escape(
          f"{name} applies only to --strategy={owner}; drop it or change --strategy.")):
        parse("--strategy=" + other, argument)


def test_each_backend_flag_sets_its_option_of_its_strategy_only():
  options = ed.options_from_flags(parse("--model_dir=/m", "--strategy=mirrored",
                                        "--num_devices=3", "--intra_op_threads=2"))
  assert dict(options.strategy_options) == {"intra_op_threads": 2, "inter_op_threads": 0,
                                            "cpu_affinity": "auto", "num_devices": 3}
  options = ed.options_from_flags(parse("--model_dir=/m", "--strategy=horovod",
                                        "--global_batch_size=64", "--batch_size=8"))
  assert (options.strategy_options["global_batch_size"],
          options.strategy_options["batch_size"]) == (64, 8)


def test_checkpoint_flags_set_their_options_and_a_metric_needs_its_direction():
  options = ed.options_from_flags(parse(
      "--model_dir=/m", "--keep_checkpoint_max=2", "--keep_checkpoint_every_n_hours=0.5",
      "--keep_best_checkpoints=3", "--best_metric=accuracy", "--best_direction=maximize"))
  assert (options.keep_checkpoint_max, options.keep_checkpoint_every_n_hours) == (2, 0.5)
  assert options.best_checkpoints == ed.BestCheckpoints(keep=3, metric="accuracy",
                                                        direction="maximize")
  assert ed.options_from_flags(parse("--model_dir=/m")).best_checkpoints is None
  loss = ed.options_from_flags(parse("--model_dir=/m", "--keep_best_checkpoints=1"))
  assert loss.best_checkpoints.direction == "minimize"  # Loss, and only loss, has one.
  with pytest.raises(ed.ConfigError, match=re.escape(
      "keeping the best checkpoints by 'auc' needs its direction: --best_direction=maximize")):
    ed.options_from_flags(parse("--model_dir=/m", "--keep_best_checkpoints=1",
                                "--best_metric=auc"))
  with pytest.raises(ed.ConfigError, match="give it too"):  # Else silently ignored.
    ed.options_from_flags(parse("--model_dir=/m", "--best_metric=auc"))
  with pytest.raises(ed.ConfigError, match="keep_checkpoint_every_n_hours"):
    options.replace(keep_checkpoint_every_n_hours=0)


def test_options_from_flags_names_the_missing_define_flags():
  with pytest.raises(ed.ConfigError, match=r"call estimator_dist.define_flags\(\)"):
    ed.options_from_flags(flags.FlagValues())


def test_the_dict_forms_of_earlier_programs_work_and_warn():
  """Programs written when options_from_flags() returned a dict unpack it into
  train_and_evaluate's keywords or index it; both work for this release, warned."""
  options = ed.options_from_flags(parse("--model_dir=/m", "--batch_size=8",
                                        "--strategy=horovod", "--hvd_compression=fp16",
                                        "--early_stopping_patience_steps=5"))
  with pytest.warns(DeprecationWarning, match=re.escape(
      "train_and_evaluate(..., options=ed.options_from_flags()) instead of **options")):
    unpacked = dict(**options)
  with pytest.warns(DeprecationWarning, match=re.escape("read options.batch_size instead")):
    assert options["batch_size"] == 8
  # Every key is a keyword train_and_evaluate takes, and together they make the same options.
  keywords = inspect.signature(ed.train_and_evaluate).parameters
  fields = {f.name for f in dataclasses.fields(options_lib.TrainOptions)}
  assert set(unpacked) == fields and not set(unpacked) & set(keywords)
  assert options_lib.TrainOptions(**unpacked) == options
  with pytest.raises(KeyError), pytest.warns(DeprecationWarning):
    options["batch"]  # pylint: disable=pointless-statement
