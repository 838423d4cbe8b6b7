"""Starting jobs, in the order of the job path:

job spec (`spec.JobSpec`) -> engine: this machine (`launcher`, with `horovodrun`,
`loopback` and `processes`), SLURM (`slurm`), Kubernetes (`kubernetes`), Spark
(`spark`), standard servers (`server`) -> processes, watched until they end.
`verify` runs two jobs and compares their weights.
"""
