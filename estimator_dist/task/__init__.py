"""What runs inside a training task, in the order of the data path:

flags (`flags`) -> options (`options.TrainOptions`) -> cluster view (`environment`,
`cluster`, `slurm_env`) -> strategy adapter (`estimator_dist.strategies`) -> decorated
model_fn (`decorator`) and sharded input (`inputs`) -> Estimator (`training`), watched by
`guards` and `heartbeat`, placed by `placement`, summarised by `summary`.
"""
