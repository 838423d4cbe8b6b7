"""estimator_dist: train an existing tf.estimator model on many workers.

  import estimator_dist as ed

  @ed.distributed                       # scales the learning rate, all-reduces gradients
  def model_fn(features, labels, mode, params): ...

  ed.train_and_evaluate(model_fn, train_input_fn, eval_input_fn,
                        strategy="multi_worker", model_dir="/shared/run", train_steps=1000)

A program defines its flags with `define_flags()`, reads them with
`options_from_flags()` and runs under `run_program(main)`; `estimator-dist launch`
starts it as a job, and `estimator-dist sweep` (or `sweep`) runs many such jobs as the
trials of a hyperparameter search. The code is laid out by role, in layers that import
only downward: `task/` (the cluster view and a task's services), `strategies/` (one
module per backend), `training/` (what runs the training), `supervision/` and
`watching/` (a job's processes and its progress), `jobs/` (a job and the local
launcher), `engines/` (SLURM, Kubernetes, Spark), `verification/` (verify),
`experiments/` (sweeps).

Each name below is imported when first used, so `import estimator_dist` is cheap and
a process that only starts jobs never imports TensorFlow, nor needs it installed: the
first name used checks that TensorFlow 2.15 is, and says in one line which extra
installs it.
"""
from estimator_dist import extras
from estimator_dist import lazy_names

# name -> the module that defines it.
_EXPORTS = {
    "__version__": "estimator_dist.version",  # Read from the installed metadata: 70 ms.
    "ConfigError": "estimator_dist.errors",
    "TrainingDiverged": "estimator_dist.errors",
    "STRATEGIES": "estimator_dist.strategies.traits",
    "StrategyAdapter": "estimator_dist.strategies.base",
    "create_strategy": "estimator_dist.strategies.factory",
    "ClusterConfigError": "estimator_dist.contract.cluster",
    "TaskInfo": "estimator_dist.contract.cluster",
    "BestCheckpoints": "estimator_dist.outputs.best_checkpoints",
    "EarlyStopping": "estimator_dist.task.early_stopping_options",
    "distributed": "estimator_dist.training.decorator",
    "define_flags": "estimator_dist.training.flags",
    "options_from_flags": "estimator_dist.training.flags",
    "run_program": "estimator_dist.training.program",
    "TrainOptions": "estimator_dist.training.options",
    "evaluate": "estimator_dist.training.evaluate_alone",
    "train_and_evaluate": "estimator_dist.training.entry_point",
    "SweepOptions": "estimator_dist.experiments.study",
    "sweep": "estimator_dist.experiments.runner",
}
__all__ = sorted(set(_EXPORTS) - {"__version__"})
__getattr__, __dir__ = lazy_names.exports(__name__, _EXPORTS, check=extras.check_tensorflow,
                                          unchecked={"__version__"})
