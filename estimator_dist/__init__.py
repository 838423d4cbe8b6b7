"""estimator_dist: train an existing tf.estimator model on many workers.

  import estimator_dist as ed

  @ed.distributed                       # scales the learning rate, all-reduces gradients
  def model_fn(features, labels, mode, params): ...

  ed.train_and_evaluate(model_fn, train_input_fn, eval_input_fn,
                        strategy="multi_worker", model_dir="/shared/run", train_steps=1000)

A program defines its flags with `define_flags()`, reads them with
`options_from_flags()` and runs under `run_program(main)`; `estimator-dist launch`
starts it as a job, and `estimator-dist sweep` (or `sweep`) runs many such jobs as the
trials of a hyperparameter search. The code is laid out by role: `task/` runs inside a
training task, `strategies/` holds one module per backend, `jobs/` starts jobs and holds
the engines, `experiments/` runs sweeps.
"""
from estimator_dist.errors import ConfigError, TrainingDiverged
from estimator_dist.experiments import SweepOptions, sweep
from estimator_dist.strategies import STRATEGIES, StrategyAdapter, create_strategy
from estimator_dist.task.cluster import ClusterConfigError, TaskInfo
from estimator_dist.task.decorator import distributed
from estimator_dist.task.early_stopping import EarlyStopping
from estimator_dist.task.flags import define_flags, options_from_flags, run_program
from estimator_dist.task.options import TrainOptions
from estimator_dist.task.training import evaluate, train_and_evaluate
