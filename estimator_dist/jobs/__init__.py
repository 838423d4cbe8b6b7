"""A job, and starting it on this machine, in the order of the job path:

job spec (`spec.JobSpec`) and its options (`launch_options`) -> the local launcher
(`launcher`: refusals at the door from `startup_checks`, the program's model_dir from
`model_dir_arg`, the tasks started by `task_starter`, Horovod's ranks through
`horovodrun` and `horovodrun_entry`, the job's MLflow run from `launch_tracking`) ->
its tasks, supervised (estimator_dist/supervision/) and watched
(estimator_dist/watching/) until they end. `server` is a standard TensorFlow server
for the standalone client mode. The other engines are in estimator_dist/engines/.
"""
