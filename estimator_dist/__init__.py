"""estimator_dist: train an existing tf.estimator model on many workers."""
from estimator_dist.cluster import ClusterConfigError, TaskInfo
from estimator_dist.errors import ConfigError, TrainingDiverged
from estimator_dist.decorator import distributed
from estimator_dist.flags import define_flags, options_from_flags, run_program
from estimator_dist.strategies import STRATEGIES, StrategyAdapter, create_strategy
from estimator_dist.training import evaluate, train_and_evaluate
