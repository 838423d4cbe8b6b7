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

import optuna
from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.experiments import dashboard
from estimator_dist.experiments import pbt_values
from estimator_dist.experiments import results
from estimator_dist.experiments import study as study_lib
from estimator_dist.experiments import runner
from estimator_dist.experiments import slurm_array
from estimator_dist.experiments import spark_engine
from estimator_dist.experiments import sweep_tracking
from estimator_dist.experiments import trial_job
from estimator_dist.strategies import traits as traits_lib

@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepFlags:
  """The flags of `estimator-dist sweep`, as FlagHolders."""
  space: flags.FlagHolder
  trials: flags.FlagHolder
  parallel: flags.FlagHolder
  workers_per_trial: flags.FlagHolder
  strategy: flags.FlagHolder
  sampler: flags.FlagHolder
  seed: flags.FlagHolder
  zip: flags.FlagHolder
  pruner: flags.FlagHolder
  prune_after_trials: flags.FlagHolder
  prune_after_steps: flags.FlagHolder
  min_resource_steps: flags.FlagHolder
  reduction_factor: flags.FlagHolder
  scheduler: flags.FlagHolder
  population: flags.FlagHolder
  pbt_interval_steps: flags.FlagHolder
  pbt_quantile: flags.FlagHolder
  pbt_keep: flags.FlagHolder
  metric: flags.FlagHolder
  direction: flags.FlagHolder
  sweep_dir: flags.FlagHolder
  storage: flags.FlagHolder
  retry_failed: flags.FlagHolder
  engine: flags.FlagHolder
  spark_master: flags.FlagHolder
  report: flags.FlagHolder
  mlflow_tracking_uri: flags.FlagHolder
  progress_secs: flags.FlagHolder
  dashboard: flags.FlagHolder
  dashboard_port: flags.FlagHolder

  def options(self) -> study_lib.SweepOptions:
    """The SweepOptions the flags set: each of its fields has a flag of its name."""
    return study_lib.SweepOptions(**{field.name: getattr(self, field.name).value
                                     for field in dataclasses.fields(study_lib.SweepOptions)})


def define_flags(flag_values=flags.FLAGS) -> SweepFlags:
  """Defines the flags of `estimator-dist sweep` on `flag_values`."""
  f = flag_values
  return SweepFlags(
      space=flags.DEFINE_string(
          "space", None, "What to search: NAME=KIND(ARGS) entries separated by spaces, each "
          "NAME a flag of the program; KIND uniform, loguniform, int, logint (low,high) or "
          "choice(a,b,...).", flag_values=f),
      trials=flags.DEFINE_integer("trials", 10, "Trials to finish (complete, pruned or "
                                  "diverged).", flag_values=f),
      parallel=flags.DEFINE_integer("parallel", 1, "Trials at once, each on its own CPUs.",
                                    flag_values=f),
      workers_per_trial=flags.DEFINE_integer("workers_per_trial", 1, "Training processes of "
                                             "each trial.", flag_values=f),
      strategy=flags.DEFINE_enum("strategy", "local", traits_lib.NAMES,
                                 "The strategy every trial's job trains with.", flag_values=f),
      sampler=flags.DEFINE_enum("sampler", "tpe", study_lib.SAMPLERS,
                                "tpe and random: Optuna's; grid: every choice combination.",
                                flag_values=f),
      seed=flags.DEFINE_integer("seed", None, "The sampler's seed.", flag_values=f),
      zip=flags.DEFINE_bool("zip", False, "The i-th trial takes the i-th value of every "
                            "choice list.", flag_values=f),
      pruner=flags.DEFINE_enum("pruner", "none", study_lib.PRUNERS,
                               "Stops unpromising trials from their evaluations.",
                               flag_values=f),
      prune_after_trials=flags.DEFINE_integer(
          "prune_after_trials", 2, "median: trials that finish before any is pruned.",
          flag_values=f),
      prune_after_steps=flags.DEFINE_integer(
          "prune_after_steps", 1, "median: steps a trial trains before it can be pruned (1: "
          "not at the evaluation of its initial values).", flag_values=f),
      min_resource_steps=flags.DEFINE_integer(
          "min_resource_steps", None, "asha, hyperband: the steps of the first rung (default: "
          "Optuna's, from the first finished trial's evaluations).", flag_values=f),
      reduction_factor=flags.DEFINE_integer(
          "reduction_factor", None, "asha, hyperband: each rung is this many times the last, "
          "and keeps 1/this of the trials (default 4 for asha, 3 for hyperband).",
          flag_values=f),
      scheduler=flags.DEFINE_enum(
          "scheduler", "none", pbt_values.SCHEDULERS, "pbt: population-based training of "
          "--population members, the bottom --pbt_quantile taking the top's checkpoints and "
          "perturbed values every --pbt_interval_steps.", flag_values=f),
      population=flags.DEFINE_integer("population", None, "pbt: members training side by "
                                      "side.", flag_values=f),
      pbt_interval_steps=flags.DEFINE_integer(
          "pbt_interval_steps", None, "pbt: global steps between two exploits.",
          flag_values=f),
      pbt_quantile=flags.DEFINE_float("pbt_quantile", 0.25, "pbt: the share of members at "
                                      "the bottom that copies the top.", flag_values=f),
      pbt_keep=flags.DEFINE_list("pbt_keep", [], "pbt: values an exploiting member takes "
                                 "unperturbed (those that shape the model's variables).",
                                 flag_values=f),
      metric=flags.DEFINE_string("metric", "accuracy", "The eval metric the sweep optimises.",
                                 flag_values=f),
      direction=flags.DEFINE_enum("direction", "maximize", study_lib.DIRECTIONS,
                                  "Whether a larger or a smaller metric is better.",
                                  flag_values=f),
      sweep_dir=flags.DEFINE_string("sweep_dir", None, "Trials' model_dirs, the study, the "
                                    "report.", flag_values=f),
      storage=flags.DEFINE_string(
          "storage", None, "The study's storage: an SQLAlchemy URL (postgresql://...) or "
          "journal:PATH for sweeps across machines (default: SQLite in --sweep_dir).",
          flag_values=f),
      retry_failed=flags.DEFINE_bool(
          "retry_failed", True, "A grid or --zip sweep run again runs each point whose "
          "trial failed once more; --noretry_failed leaves them failed: the sweep runs the "
          "rest, reports them and exits 1 naming them.", flag_values=f),
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
      mlflow_tracking_uri=flags.DEFINE_string(
          "mlflow_tracking_uri", None, "Record the sweep as a run of this MLflow tracking "
          "server, each trial's job a run nested in it (pip install "
          "'estimator_dist[tracking]').", flag_values=f),
      progress_secs=flags.DEFINE_float(
          "progress_secs", 30, "Every this many seconds, say how many trials finished, "
          "run and failed, the best so far and the ETA; 0 never does.", lower_bound=0.0,
          flag_values=f),
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
      if not f.sweep_dir.value:
        raise errors.ConfigError("--report needs the --sweep_dir of a sweep.")
      options = study_lib.stored_options(f.sweep_dir.value, storage=f.storage.value)
      results.summarize(study_lib.open_study(options, create=False), options=options,
                        out=sys.stdout)
      return 0
    if not f.space.value:
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

  def start_dashboard(study):
    if f.dashboard.value:
      dashboards.append(dashboard.start(study, port=f.dashboard_port.value))
  try:
    if f.engine.value == "spark":
      spark_context = spark_engine.context(f.spark_master.value)
      try:
        spark_engine.sweep(program, options=f.options(), spark_context=spark_context,
                           on_study=start_dashboard)
      finally:
        spark_context.stop()
    else:
      runner.sweep(program, options=f.options(), on_study=start_dashboard)
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
  sys.stderr.write(f"estimator_dist.sweep: {error}\n")
  return 2 if isinstance(error, errors.ConfigError) else 1


def _warn(message):
  sys.stderr.write(f"estimator_dist.sweep: {message}\n")


def run():
  sweep_flags = define_flags()
  return command_line.run(lambda argv: main(argv, sweep_flags)) or 0


if __name__ == "__main__":
  sys.exit(run())
