"""Strategy adapters, one module per backend, and the factory that picks one.

  adapter = create_strategy("multi_worker", communication="ring")
  STRATEGIES            # the names, in traits.TABLE order

The names are imported when first used: the job path reads `traits` without TensorFlow,
and the training flags each backend's options (`options`, `horovod_options`).
"""
from estimator_dist import lazy_names

_EXPORTS = {
    "StrategyAdapter": "estimator_dist.strategies.base",
    "create_strategy": "estimator_dist.strategies.factory",
    "ALIASES": "estimator_dist.strategies.traits",
    "STRATEGIES": "estimator_dist.strategies.traits",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names.exports(__name__, _EXPORTS)
