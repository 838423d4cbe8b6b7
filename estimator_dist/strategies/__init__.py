"""Strategy adapters, one module per backend, and the factory that picks one.

  adapter = create_strategy("multi_worker", communication="ring")
  STRATEGIES            # the names, in traits.TABLE order
"""
from estimator_dist.strategies.base import StrategyAdapter
from estimator_dist.strategies.factory import create_strategy
from estimator_dist.strategies.traits import ALIASES, STRATEGIES
