"""Parallel experiments: `sweep` runs trials of a program, each a distributed job, for
one Optuna study; `SweepOptions` says what it searches and how.

The names are imported when first used (Optuna and matplotlib with them).
"""
from estimator_dist import lazy_names

_EXPORTS = {
    "SweepOptions": "estimator_dist.experiments.study",
    "sweep": "estimator_dist.experiments.runner",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names.exports(__name__, _EXPORTS)
