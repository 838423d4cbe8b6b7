"""`estimator-dist sweep`: many trials of a training program, each a job of our launcher.

  estimator-dist sweep --space='learning_rate=loguniform(1e-4,1e-1) batch_size=choice(16,32)' \\
      --trials=20 --parallel=2 --strategy=local --sampler=tpe --pruner=median \\
      --metric=accuracy --direction=maximize --sweep_dir=/tmp/sweep \\
      -- python -m model_zoo.mnist_dnn --train_steps=600 --save_checkpoints_steps=100

Run the same command again to resume (finished trials are kept; one whose runner died is
retried from its checkpoint); `--report` only writes the report of a sweep dir.
"""

import sys

import optuna
from absl import app
from absl import flags

from estimator_dist import errors
from estimator_dist.experiments import results
from estimator_dist.experiments import study as study_lib
from estimator_dist.experiments import runner
from estimator_dist.experiments import slurm_array
from estimator_dist.experiments import spark_engine
from estimator_dist.experiments import trial_job
from estimator_dist.strategies import traits as traits_lib

_SPACE = flags.DEFINE_string(
    "space", None, "What to search: NAME=KIND(ARGS) entries separated by spaces, each NAME a "
    "flag of the program; KIND uniform, loguniform, int, logint (low,high) or choice(a,b,...).")
_TRIALS = flags.DEFINE_integer("trials", 10, "Trials to finish (complete, pruned or diverged).")
_PARALLEL = flags.DEFINE_integer("parallel", 1, "Trials at once, each on its own CPUs.")
_WORKERS = flags.DEFINE_integer("workers_per_trial", 1, "Training processes of each trial.")
_STRATEGY = flags.DEFINE_enum("strategy", "local", traits_lib.NAMES,
                              "The strategy every trial's job trains with.")
_SAMPLER = flags.DEFINE_enum("sampler", "tpe", study_lib.SAMPLERS,
                             "tpe and random: Optuna's; grid: every choice combination.")
_SEED = flags.DEFINE_integer("seed", None, "The sampler's seed.")
_ZIP = flags.DEFINE_bool("zip", False, "The i-th trial takes the i-th value of every "
                         "choice list.")
_PRUNER = flags.DEFINE_enum("pruner", "none", study_lib.PRUNERS,
                            "Stops unpromising trials from their evaluations.")
_PRUNE_AFTER_TRIALS = flags.DEFINE_integer(
    "prune_after_trials", 2, "median: trials that finish before any is pruned.")
_PRUNE_AFTER_STEPS = flags.DEFINE_integer(
    "prune_after_steps", 1, "median: steps a trial trains before it can be pruned (1: "
    "not at the evaluation of its initial values).")
_METRIC = flags.DEFINE_string("metric", "accuracy", "The eval metric the sweep optimises.")
_DIRECTION = flags.DEFINE_enum("direction", "maximize", study_lib.DIRECTIONS,
                               "Whether a larger or a smaller metric is better.")
_SWEEP_DIR = flags.DEFINE_string("sweep_dir", None, "Trials' model_dirs, the study, the report.")
_STORAGE = flags.DEFINE_string(
    "storage", None, "The study's storage: an SQLAlchemy URL (postgresql://...) or "
    "journal:PATH for sweeps across machines (default: SQLite in --sweep_dir).")
_ENGINE = flags.DEFINE_enum(
    "engine", "local", ("local", "slurm", "spark"), "local: run the trials here; slurm: "
    "create the study and print an sbatch job array of --parallel runners that share it; "
    "spark: run each trial as a Spark job (a barrier stage of its processes).")
_SPARK_MASTER = flags.DEFINE_string(
    "spark_master", None, "--engine=spark: local[N] or spark://host:port (default: the "
    "master spark-submit gives).")
_REPORT = flags.DEFINE_bool("report", False, "Only write the report of --sweep_dir's study.")


def _options():
  return study_lib.SweepOptions(
      space=_SPACE.value, trials=_TRIALS.value, parallel=_PARALLEL.value,
      workers_per_trial=_WORKERS.value, strategy=_STRATEGY.value, sampler=_SAMPLER.value,
      seed=_SEED.value, zip=_ZIP.value, pruner=_PRUNER.value,
      prune_after_trials=_PRUNE_AFTER_TRIALS.value,
      prune_after_steps=_PRUNE_AFTER_STEPS.value, metric=_METRIC.value,
      direction=_DIRECTION.value, sweep_dir=_SWEEP_DIR.value, storage=_STORAGE.value)


def main(argv):
  optuna.logging.set_verbosity(optuna.logging.WARNING)  # Our lines say what happens.
  try:
    if _REPORT.value:
      if not _SWEEP_DIR.value:
        raise errors.ConfigError("--report needs the --sweep_dir of a sweep.")
      options = study_lib.stored_options(_SWEEP_DIR.value, storage=_STORAGE.value)
      results.summarize(study_lib.open_study(options, create=False), options=options,
                        out=sys.stdout)
      return 0
    if not _SPACE.value:
      raise errors.ConfigError("give the sweep a --space, e.g. "
                               "--space='learning_rate=loguniform(1e-4,1e-1)'.")
    if _ENGINE.value == "slurm":
      options = _options()
      runner.prepare(argv[1:], options=options)
      sys.stdout.write(slurm_array.sbatch_array(argv[1:], options=options))
    elif _ENGINE.value == "spark":
      spark_context = spark_engine.context(_SPARK_MASTER.value)
      try:
        spark_engine.sweep(argv[1:], options=_options(), spark_context=spark_context)
      finally:
        spark_context.stop()
    else:
      runner.sweep(argv[1:], options=_options())
    return 0
  except (errors.ConfigError, trial_job.TrialFailed) as e:
    sys.stderr.write(f"estimator_dist.sweep: {e}\n")
    return 2 if isinstance(e, errors.ConfigError) else 1


def run():
  return app.run(main) or 0


if __name__ == "__main__":
  sys.exit(run())
