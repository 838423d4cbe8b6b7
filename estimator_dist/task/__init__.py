"""Inside a training task, below the strategies: the task's services.

`placement` pins CPUs, `own_address` keeps servers on the task's own address
(`rank_address`: a Horovod rank's on the job's network), `own_port` names a taken port,
`watchdog` (with its companion process, `watchdog_companion`) notices a stuck task,
`inputs` (`array_inputs`) shards the input, `best_checkpoint_keeper` keeps the best
checkpoints, `evaluation` and `evaluator` evaluate and export, `early_stopping` stops every
task at one step, also when `preemption` asks it to save (`preemption_save`); what their
options name is in `evaluation_settings` and `early_stopping_options`, without
TensorFlow. What the engines tell a task and what it tells back (the cluster view, the
variables, the mailbox, the stop files) is the contract, in
`estimator_dist.contract`; what a job leaves in its model_dir (checkpoints, event files,
its lock) is in `estimator_dist.outputs`. No module here imports from `strategies/` or
above; above `training/`, only the programs that run as a task themselves import from here
(tests/imports_test.py).
"""
