"""What an engine tells a task and what a task tells back, in the base layer every other
layer may read.

`env_vars` names the environment variables an engine (the launcher, SLURM, Kubernetes,
Spark, a sweep) and its tasks agree on; `task_env` gives their values for a job
(`task_environment`) and renders them (shell `export` lines, a Kubernetes `env:` list),
so every engine gives a task the same variables. A task reads who it is from them:
`environment` picks the source, read by `cluster` (`TaskInfo`, TF_CONFIG, Horovod's
variables) and `slurm_env`. `process_identity` is the launcher's identity its tasks
watch, `preload` the library the launcher preloads into a task (native/: its binds on
the job's own address, which `bind_address` names; TensorFlow's request ids unique).
`mailbox` is the one channel by which a job's tasks tell its launcher and each other what they need, for one attempt: `heartbeat` (a task's beats),
`summary` (the chief's summary: its line, and its record for the launcher), `joined` (that
a task joined the job's strategy), `chief_model_dir` and `rounds` (what the chief decided
for a program's n-th call of a kind) are its messages. `stop_files`
names the files in a model_dir by which a sweep and the chief agree on a stop. The exit codes are in `estimator_dist.errors`, the only module outside the
standard library that this folder imports (tests/task_env_test.py).
"""
