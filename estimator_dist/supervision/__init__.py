"""Supervising a job's processes: `processes.TaskGroup` starts the tasks and waits for
them (their processes found in `process_tree`, their output copied by `task_output`, their
hangs found by `hangs`; SIGTERM preempts them, `signal_forwarding` passes a signal on), in
private namespaces (`sandbox`, whose first process is `namespace_holder`), on free ports
(`local_cluster`), with temporary directories (`job_dirs`) removed however the job ends;
`failure_cause` reads why a job failed from its log.
"""
