"""What runs inside a training task, in the order of the data path:

flags (`flags`) -> options (`options.TrainOptions`) -> cluster view (`environment`,
`cluster`, `slurm_env`) -> strategy adapter (`estimator_dist.strategies`) -> decorated
model_fn (`decorator`) and sharded input (`inputs`) -> Estimator (`training`; the
evaluator task: `evaluator`), watched by `guards`, `heartbeat` and `watchdog`, on
checkpoints `checkpoints` vouches for, in a model_dir `model_dir_lock` keeps to one job;
placed by `placement`, summarised by `summary`.
"""
