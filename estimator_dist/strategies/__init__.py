"""Strategy adapters, one module per backend, and the factory that picks one."""
from estimator_dist.strategies.base import StrategyAdapter
from estimator_dist.strategies.factory import ALIASES, STRATEGIES, create_strategy
