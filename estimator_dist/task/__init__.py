"""Inside a training task, below the strategies: the cluster view and the task's services.

The cluster view: `environment` picks the source (TF_CONFIG, Horovod, SLURM), read by
`cluster` and `slurm_env`. The services: `placement` pins CPUs, `own_address` and
`bind_address` keep servers on the task's own address (`rank_address`: a Horovod rank's
on the job's network), `own_port` names a taken port, `heartbeat` and `watchdog` (with
its companion process, `watchdog_companion`) notice a stuck task, `inputs`
(`array_inputs`) shards the input, `checkpoints` vouches for checkpoints in a model_dir
`model_dir_lock` keeps to one job (and `model_dir_check` finds writable, with space),
`evaluation` and `evaluator` evaluate and export, `early_stopping` stops every task at one
step, also when `preemption` asks it to save. What the engines tell a task and what it
tells back (the variables, the stop files, the summary record) is the contract, in
`estimator_dist.contract`. No module here imports from `strategies/` or above
(tests/imports_test.py).
"""
