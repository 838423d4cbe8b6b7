"""Starting jobs, in the order of the job path:

job spec (`spec.JobSpec`) -> engine: this machine (`launcher`: refusals at the door from
`startup_checks`, the tasks' ports from `local_cluster`, the program's model_dir from
`model_dir_arg`, private namespaces from `sandbox`, whose first process is
`namespace_holder`, Horovod's ranks through `horovodrun`), SLURM (`slurm`), Kubernetes
(`kubernetes`), Spark (`spark`), standard servers (`server`) -> processes, a
`processes.TaskGroup` watched until they end (their processes found in `process_tree`,
their output copied by `task_output`; SIGTERM preempts them), and their temporary
directories (`job_dirs`) removed.
`verify` runs two jobs and compares their weights.
"""
