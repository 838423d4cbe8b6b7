"""The local engine: runs a job's tasks as processes of this machine and watches them.

  code = launch(JobSpec(strategy="parameter_server", num_workers=2, evaluator=True,
                        command=["python", "-m", "model_zoo.mnist_cnn"]))

For tf.distribute strategies every task is a process with its own TF_CONFIG on free
ports of 127.0.0.1; for Horovod the program runs under `horovodrun` (MPI when Horovod
was built with it, else Gloo), on this machine or on the hosts given with --hosts or
--hostfile. Output lines are prefixed with the task (`[worker:1]`).
When a task fails or stops making progress (heartbeats), the others are stopped and the
launcher exits with that task's code, or with --max_restarts starts the job again from
its latest checkpoint. --elastic runs Horovod's elastic mode. Ctrl-C stops everything;
SIGTERM or SIGUSR1 preempts the job: every task stops at one agreed step, the chief saves
a checkpoint there, and the launcher exits with errors.PREEMPTED_EXIT_CODE (run the same
command again to resume).
The job's temporary directories go with it, however it ends (job_dirs).
"""

import dataclasses
import os
import shutil
import signal
import sys

from estimator_dist import errors
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import chief_model_dir
from estimator_dist.contract import joined
from estimator_dist.contract import mailbox
from estimator_dist.contract import preload
from estimator_dist.contract import process_identity
from estimator_dist.contract import summary
from estimator_dist.instrument import launching
from estimator_dist.jobs import horovodrun
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import launch_tracking
from estimator_dist.jobs import model_dir_arg
from estimator_dist.jobs import startup_checks
from estimator_dist.jobs import task_starter
from estimator_dist.outputs import model_dir_lock
from estimator_dist.supervision import job_dirs
from estimator_dist.supervision import processes
from estimator_dist.supervision import sandbox as sandbox_lib
from estimator_dist.supervision import shown_output
from estimator_dist.watching import curves
from estimator_dist.watching import live_progress


PORT_RETRIES = 3




def launch(job, *, options=launch_options.LaunchOptions(), out=sys.stdout):
  """Runs `job` (a JobSpec) on this machine; returns its exit code.

  Every strategy runs on this machine, except horovod given hosts. When a task fails,
  every task is stopped; with `options.max_restarts`, the whole job then starts again
  (up to that many times) and resumes from the latest checkpoint.
  """
  run, horovodrun_ranks = options.horovod, job.traits.ranks_from_horovodrun
  if not horovodrun_ranks and not run.is_default:
    raise errors.ConfigError(
        f"--hosts, --hostfile, --network_interface, --horovod_controller, --horovodrun_args "
        f"and --elastic apply to --strategy=horovod; "
        f"{job.strategy} on several machines starts from TF_CONFIG (see `estimator-dist k8s` "
        f"and `estimator-dist slurm`) or estimator_dist.engines.spark.run.")
  local = horovodrun.is_loopback(options.host) and (
      not horovodrun_ranks or run.is_local(job.num_workers))
  if not local and options.isolation == "private":
    raise errors.ConfigError(
        "--isolation=private keeps a job on this machine; a job with tasks on other hosts "
        "runs on their network (keep it private; see the trust boundary in docs/security.md).")
  startup_checks.check_job(job, options.model_dir, local=local)
  instrumented = options.instrument == "auto" and launching.instrumented(job.command)
  shared = None if local or not instrumented else startup_checks.mailbox_across_hosts(
      model_dir_arg.given_model_dir(list(job.command), options.model_dir))
  # Heartbeats go through a directory of this machine: local jobs only. A remote
  # horovodrun gets a moment to stop the ranks it started over SSH.
  group = processes.TaskGroup(
      out=out, mailbox=local, hang_timeout_secs=options.hang_timeout_secs if local else None,
      startup_timeout_secs=options.startup_timeout_secs,
      stop_grace_secs=0.0 if local else 2.0, preemption_grace_secs=options.preemption_grace_secs)
  sandbox = made = code = tracked = None
  previous = {}
  try:
    previous = processes.stop_on_signals(group)
    sandbox, why = sandbox_lib.open_sandbox(options.isolation if local else "host",
                                            preexec_fn=process_identity.die_with_parent)
    exposed = startup_checks.exposure(options, on_host_network=local and not sandbox,
                                      why_no_namespace=why)
    if local or not (horovodrun_ranks and run.network_interface):
      group.log(sandbox_lib.describe(sandbox) +
                (f"; no private namespace here: {why}" if why else ""))
    elif preload.library():
      group.log(f"isolation: the hosts' network; every process of the job listens on "
                f"--network_interface={run.network_interface} only (keep it private)")
    for note in (exposed, local and startup_checks.interpreter_note(job.command)):
      if note:
        group.log(note)
    job_dirs.remove_left_behind(group.log, keep=model_dir_arg.has_checkpoint)
    model_dir, made = model_dir_arg.job_model_dir(list(job.command), options.model_dir)
    group.log(f"strategy={job.strategy} workers={job.num_workers} model_dir={model_dir}"
              + (" (a new temporary directory)" if made else ""))
    group.task_logs = shown_output.TaskLogs(
        None if checkpoint_names.is_url(model_dir) else
        os.path.join(model_dir, checkpoint_names.TOOLKIT_DIR, "logs"),
        level=options.terminal,
        program=os.path.basename(launching.program_file(list(job.command)) or ""))
    if shared:  # The tasks of an instrumented program on several hosts agree there.
      group.mailbox = mailbox.Mailbox(group.temporary_directory("mailbox", shared))
    if instrumented:
      group.log(f"instrumenting {instrumented}: it does not import estimator_dist, so its "
                f"tasks start the job's {job.strategy} strategy as they import TensorFlow, "
                f"and its Estimators train, evaluate and export through the toolkit "
                f"(--instrument=off: run it as it is)")
    if run.elastic and not run.elastic.discovery_script:
      run = dataclasses.replace(run, elastic=dataclasses.replace(
          run.elastic, discovery_script=horovodrun.local_discovery_script(
              job.num_workers, directory=group.temporary_directory("elastic"), log=group.log)))
    private = {}
    if local:
      # The tasks' temporary files, and Open MPI's session directory and shared memory,
      # which a stopped mpirun leaves behind, go with the job. (Open MPI names them after
      # mpirun's pid, which in a job's own PID namespace is the same small number in
      # every job.)
      scratch = group.temporary_directory("job")
      private = {"TMPDIR": scratch, "OMPI_MCA_orte_tmpdir_base": scratch,
                 "OMPI_MCA_btl_vader_backing_directory":
                     group.temporary_directory("shm", job_dirs.shared_memory())}
    # The options as this job resolved them: its model_dir, horovodrun's discovery script.
    resolved = dataclasses.replace(options, model_dir=model_dir, horovod=run)
    starter = task_starter.Starter(job=job, command=list(job.command), options=resolved,
                                   group=group, sandbox=sandbox, local=local,
                                   private_env=private, instrumented=instrumented or None)
    with model_dir_lock.held(model_dir, group.log):
      tracked = launch_tracking.start(options.mlflow_tracking_uri, job=job,
                                      model_dir=model_dir, log=group.log)
      code = _run_attempts(starter, new_model_dir=made)
    return code
  finally:
    processes.ignore_signals(previous)  # Until everything below is done.
    error = sys.exc_info()[1]
    group.close()
    if tracked:
      tracked.ended(code, group.tasks, None if isinstance(error, SystemExit) else error,
                    summary=group.summary)
    if sandbox:
      sandbox.close()
    why = made and _why_remove(model_dir, code,
                               kept_output=group.task_logs and group.task_logs.hidden)
    if why:
      shutil.rmtree(model_dir, ignore_errors=True)
      group.log(f"removed {model_dir}: {why}")
    for s, handler in previous.items():
      signal.signal(s, handler)


def _why_remove(model_dir, code, *, kept_output):
  """Why the new temporary `model_dir` goes once the job ended with `code` (None: stopped
  by a signal), or None: it keeps a checkpoint, what a job that finished wrote, or the
  tasks' output that the terminal did not show all of (`kept_output`)."""
  if code == 0:  # The toolkit's own files alone (its tasks' logs) are not the job's.
    wrote = not os.path.isdir(model_dir) or (
        set(os.listdir(model_dir)) - {checkpoint_names.TOOLKIT_DIR}) or kept_output
    return None if wrote else "the job finished without writing anything there"
  if model_dir_arg.has_checkpoint(model_dir) or kept_output:
    return None
  return f"the job {'failed' if code else 'ended'} before writing a checkpoint"


def _run_attempts(starter, *, new_model_dir):
  """Runs the job, again after a failure up to max_restarts times, and on new ports when
  one was taken (up to PORT_RETRIES times), saying how far it is; returns its exit code."""
  group, model_dir = starter.group, starter.options.model_dir
  lines = live_progress.ProgressLines.of(group, model_dir=model_dir,
                                         every_secs=starter.options.progress_secs)

  def on_tick():
    lines.model_dir = chief_model_dir.read(group.mailbox) or lines.model_dir
    lines.tick()
  try:
    code = _attempts(starter, on_tick=on_tick)
  finally:
    lines.close()
  own, kept = lines.model_dir, None
  if starter.local and os.path.normpath(own) != os.path.normpath(model_dir):
    kept = model_dir_arg.kept_from_scratch(own, scratch=starter.private_env["TMPDIR"],
                                           job_model_dir=model_dir)
  if kept:
    group.log(f"the program trained in a temporary directory of its own, {own} (the "
              f"chief's), which goes with the job: its checkpoints, evaluations and exports "
              f"were moved to {kept}")
    model_dir = kept
  elif os.path.normpath(own) != os.path.normpath(model_dir):
    group.log(f"the program trained in its own model_dir, {own} (the chief's), not in "
              f"{model_dir}: its checkpoints, evaluations and curves are there")
    model_dir = own
  ours = group.ours(code)
  if code in _VERDICT_CODES and not ours:
    group.log(f"exit code {code} is the program's own, not a verdict of estimator_dist "
              f"(none of its tasks said it chose that code): passed on as it is")
  if ours and code == errors.DIVERGED_EXIT_CODE:
    group.log("training diverged; a restart from the same checkpoint would diverge again")
  if ours and code == errors.PORT_IN_USE_EXIT_CODE:
    group.log(f"other processes kept taking the job's ports ({PORT_RETRIES} tries on new "
              f"ports); run the job with --isolation=private, where no process outside "
              f"the job can")
  if ours and code == errors.PREEMPTED_EXIT_CODE:
    again = f" with --model_dir={model_dir}" if new_model_dir else ""
    group.log(f"every task stopped at one step and the chief saved a checkpoint in "
              f"{model_dir}; run the same command again{again} to resume from it")
  if code == 0:
    code = _joined_or_failed(starter)
  outcome = {0: "finished", errors.PREEMPTED_EXIT_CODE: "was preempted" if ours else "failed"
             }.get(code, "failed")
  if group.task_logs.note():
    group.log(group.task_logs.note())
  group.log(f"job {outcome} with exit code {code}")
  if group.mailbox:
    record = summary.read_record(group.mailbox, warn=group.log, expected=code == 0)
    summaries = [record] if record else []
  else:
    summaries = [f for t in group.tasks for f in t.printed_summaries]
  group.summary = summaries[0] if summaries else None  # The job's MLflow run's.
  for fields in summaries:
    group.log("summary\n" + summary.format_table({**fields, **(
        {"model_dir": model_dir} if kept else {})}))
  drawn = starter.options.curves and curves.draw(model_dir)
  if drawn:
    group.log(drawn)
  return code


def _joined_or_failed(starter):
  """0 when every task the job expects joined its strategy (contract/joined.py), else 1
  with why: tasks that exit 0 without joining trained alone, if at all."""
  job = starter.job
  missing = joined.not_joined(starter.group.mailbox, starter.expected_to_join(),
                              strategy=job.strategy)
  if not missing:
    return 0
  starter.group.log(joined.failure(missing, strategy=job.strategy))
  return 1


# The exit codes the launcher acts on when a task's toolkit chose them (its verdict).
_VERDICT_CODES = (errors.DIVERGED_EXIT_CODE, errors.PORT_IN_USE_EXIT_CODE,
                  errors.PREEMPTED_EXIT_CODE)


def _attempts(starter, *, on_tick):
  group, options, model_dir = starter.group, starter.options, starter.options.model_dir
  attempt = port_retries = 0
  while True:
    resume = _resume_point(model_dir, group.log, one_process=starter.job.traits.one_process)
    if attempt and not port_retries:
      group.log(f"restart {attempt} of {options.max_restarts}: starting every task "
                f"again; training resumes from "
                f"{resume or f'the start (no checkpoint in {model_dir})'}")
    code = group.wait(starter.start_tasks(), options.shutdown_timeout_secs,
                      beating=starter.beating(), on_tick=on_tick)
    ours = group.ours(code)  # Codes the toolkit chose, not the program (contract/mailbox).
    if ours and code == errors.PORT_IN_USE_EXIT_CODE and port_retries < PORT_RETRIES:
      port_retries += 1
      group.log(f"another process took a port of the job before its task listened on "
                f"it; starting every task again on new ports ({port_retries} of "
                f"{PORT_RETRIES})")
    elif (code == 0 or (ours and code in (errors.DIVERGED_EXIT_CODE,
                                           errors.PREEMPTED_EXIT_CODE)) or
          group.preemption_asked or attempt == options.max_restarts):  # No restart then.
      break
    else:
      attempt, port_retries = attempt + 1, 0
    # A program that names its own model_dir resumes there.
    model_dir = chief_model_dir.read(group.mailbox) or model_dir
    group.forget_tasks()
  return code


def _resume_point(model_dir, log, *, one_process):
  """The checkpoint every task resumes from, read in full before any task starts.

  Reading checkpoints needs TensorFlow, which the launcher imports only when the
  model_dir has some and the job has several processes to agree on one: a new job, and a
  job of one process (whose chief reads them itself, as it imports TensorFlow anyway: 3 s
  less for every resumed sweep trial and PBT segment here), start without it. Then the
  checkpoint the index names is said.
  """
  if not checkpoint_names.is_url(model_dir) and not model_dir_arg.has_checkpoint(model_dir):
    return None
  if one_process and not checkpoint_names.is_url(model_dir):
    try:
      latest = checkpoint_names.latest_name(model_dir)
    except OSError:
      return None
    return latest and os.path.join(model_dir, latest)
  from estimator_dist.outputs import checkpoints  # pylint: disable=g-import-not-at-top
  return checkpoints.resume_point(model_dir, log)
