"""Parallel experiments: `sweep` runs trials of a program, each a distributed job, for
one Optuna study; `SweepOptions` says what it searches and how."""
from estimator_dist.experiments.study import SweepOptions
from estimator_dist.experiments.runner import sweep
