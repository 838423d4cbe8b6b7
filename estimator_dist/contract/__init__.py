"""What an engine tells a task and what a task tells back, in the base layer every other
layer may read.

`env_vars` names the environment variables an engine (the launcher, SLURM, Kubernetes,
Spark, a sweep) and its tasks agree on; `task_env` gives their values for a job
(`task_environment`) and renders them (shell `export` lines, a Kubernetes `env:` list),
so every engine gives a task the same variables. A task reads who it is from them:
`environment` picks the source, read by `cluster` (`TaskInfo`, TF_CONFIG, Horovod's
variables) and `slurm_env`. `process_identity` is the launcher's identity its tasks
watch, `bind_address` the preload library (native/bind_address.c) the launcher puts in
a task's environment, and `heartbeat` the files a task beats and the launcher reads.
`stop_files` names the files in a model_dir by which a sweep, the chief and the launcher
agree on a stop, `summary` is the chief's summary (its line, and its record for the
launcher), and `joined` the record by which a task tells the launcher it joined the job's
strategy. The exit codes are in `estimator_dist.errors`, the only module outside the
standard library that this folder imports (tests/task_env_test.py).
"""
