"""The engines that start a job where the local launcher does not: SLURM (`slurm`, with
`job_end` reading the mailbox once its step ended), Kubernetes (`kubernetes`: manifests)
and Spark (`spark`: barrier tasks on executors).
"""
