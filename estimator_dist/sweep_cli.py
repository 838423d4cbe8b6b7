"""`estimator-dist sweep`: many trials of a training program, each a job of our launcher.

  estimator-dist sweep --space='learning_rate=loguniform(1e-4,1e-1) batch_size=choice(16,32)' \\
      --trials=20 --parallel=2 --strategy=local --sampler=tpe --pruner=median \\
      --metric=accuracy --direction=maximize --sweep_dir=/tmp/sweep \\
      -- python -m model_zoo.mnist_dnn --train_steps=600 --save_checkpoints_steps=100

Run the same command again to resume (finished trials are kept; one whose runner died is
retried from its checkpoint; a grid's or --zip's point whose trial failed is run again
unless --noretry_failed); `--report` only writes the report of a sweep dir.
"""

import dataclasses
import sys
from typing import Dict

import optuna
from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.experiments import dashboard
from estimator_dist.experiments import results
from estimator_dist.experiments import runner
from estimator_dist.experiments import slurm_array
from estimator_dist.experiments import spark_engine
from estimator_dist.experiments import study as study_lib
from estimator_dist.experiments import sweep_tracking
from estimator_dist.experiments import trial_job

@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepFlags:
  """The flags of `estimator-dist sweep`, as FlagHolders: {field: holder} of the
  SweepOptions they set, and the program's own (where the trials run, what it does)."""
  settings: Dict[str, flags.FlagHolder]
  engine: flags.FlagHolder
  spark_master: flags.FlagHolder
  report: flags.FlagHolder
  dashboard: flags.FlagHolder
  dashboard_port: flags.FlagHolder

  def value(self, option):
    """The parsed value of the flag of SweepOptions' field `option`."""
    return self.settings[option].value

  def options(self) -> study_lib.SweepOptions:
    """The SweepOptions the flags set."""
    return option_flags.options_from_flags(study_lib.SweepOptions, self.settings)


def define_flags(flag_values=flags.FLAGS) -> SweepFlags:
  """Defines the flags of `estimator-dist sweep` on `flag_values`."""
  f = flag_values
  return SweepFlags(
      settings=option_flags.define_flags(study_lib.SweepOptions, flag_values=f),
      engine=flags.DEFINE_enum(
          "engine", "local", ("local", "slurm", "spark"), "local: run the trials here; slurm: "
          "create the study and print an sbatch job array of --parallel runners that share "
          "it; spark: run each trial as a Spark job (a barrier stage of its processes).",
          flag_values=f),
      spark_master=flags.DEFINE_string(
          "spark_master", None, "--engine=spark: local[N] or spark://host:port (default: the "
          "master spark-submit gives).", flag_values=f),
      report=flags.DEFINE_bool("report", False, "Only write the report of --sweep_dir's "
                               "study.", flag_values=f),
      dashboard=flags.DEFINE_bool(
          "dashboard", False, "Serve optuna-dashboard over the sweep's study on 127.0.0.1 "
          "while it runs, and after it until Ctrl-C.", flag_values=f),
      dashboard_port=flags.DEFINE_integer(
          "dashboard_port", 0, "--dashboard's port (0: a free one, printed).", lower_bound=0,
          flag_values=f))


def main(argv, sweep_flags):
  optuna.logging.set_verbosity(optuna.logging.WARNING)  # Our lines say what happens.
  f = sweep_flags
  try:
    if f.report.value:
      if not f.value("sweep_dir"):
        raise errors.ConfigError("--report needs the --sweep_dir of a sweep.")
      options = study_lib.stored_options(f.value("sweep_dir"), storage=f.value("storage"))
      results.summarize(study_lib.open_study(options, create=False), options=options,
                        out=sys.stdout)
      return 0
    if not f.value("space"):
      raise errors.ConfigError("give the sweep a --space, e.g. "
                               "--space='learning_rate=loguniform(1e-4,1e-1)'.")
    if f.engine.value == "slurm":
      if f.dashboard.value:
        raise errors.ConfigError("--dashboard serves a sweep that runs here or on Spark; for "
                                 "--engine=slurm run `optuna-dashboard STORAGE` where the "
                                 "study's storage is reachable.")
      study, options = runner.prepare(argv[1:], options=f.options())
      sweep_tracking.SweepRun.start(study, options, warn=_warn)  # Before its runners.
      sys.stdout.write(slurm_array.sbatch_array(argv[1:], options=options))
    else:
      if f.dashboard.value:  # Before the study is made.
        errors.check_installed("optuna_dashboard", "--dashboard")
      return _sweep_here(argv[1:], f)
    return 0
  except (errors.ConfigError, trial_job.TrialFailed) as e:
    return _failed(e)


def _sweep_here(program, f):
  """Runs the sweep here or on Spark; its exit code. With --dashboard, serves the study
  during the sweep and after it (after its error, if it failed)."""
  dashboards, code = [], 0

  def start_dashboard(_):  # Once the study exists.
    if f.dashboard.value:
      dashboards.append(dashboard.start(options.storage_url, port=f.dashboard_port.value))
  try:
    options = f.options()
    if f.engine.value == "spark":
      spark_context = spark_engine.context(f.spark_master.value)
      try:
        spark_engine.sweep(program, options=options, spark_context=spark_context,
                           on_study=start_dashboard)
      finally:
        spark_context.stop()
    else:
      runner.sweep(program, options=options, on_study=start_dashboard)
  except (errors.ConfigError, trial_job.TrialFailed) as e:
    code = _failed(e)
  except BaseException:  # Ctrl-C, or an error of its own: no serving after it.
    for served in dashboards:
      served.close()
    raise
  for served in dashboards:
    served.serve_until_stopped(sys.stdout)
  return code


def _failed(error):
  command_line.write_error(str(error), "sweep")
  return 2 if isinstance(error, errors.ConfigError) else 1


def _warn(message):
  command_line.write(sys.stderr, message, command="sweep")


def run():
  sweep_flags = define_flags()
  return command_line.run(lambda argv: main(argv, sweep_flags), command="sweep") or 0


if __name__ == "__main__":
  sys.exit(run())
