"""Every program's flags, as a user types and reads them: name, type, default, bounds or
values, and help. The table below is the users' commands; a change to how the flags are
declared must leave it as it is."""

import pytest
from absl import flags

import estimator_dist as ed
from estimator_dist import launch
from estimator_dist import sweep_cli
from estimator_dist.engines import kubernetes
from estimator_dist.engines import slurm
from estimator_dist.verification import verify
from estimator_dist.watching import progress_watch

DEFINERS = {
    "launch": launch.define_flags,
    "slurm": slurm.define_flags,
    "k8s": kubernetes.define_flags,
    "sweep": sweep_cli.define_flags,
    "verify": verify.define_flags,
    "progress": progress_watch.define_flags,
    "training": ed.define_flags,
}


def describe(flag):
  """(name, type, default, bounds and values, help) of an absl flag; an enum's help
  without the values absl puts in front of it."""
  parser = flag.parser
  extra = {}
  for bound in ("lower_bound", "upper_bound"):
    if getattr(parser, bound, None) is not None:
      extra[bound] = getattr(parser, bound)
  help_text = flag.help
  if getattr(parser, "enum_values", None):
    extra["values"] = tuple(parser.enum_values)
    prefix = f"<{'|'.join(parser.enum_values)}>: "
    assert help_text.startswith(prefix), flag.name
    help_text = help_text[len(prefix):]
  return (flag.name, flag.flag_type(), flag.default, extra, help_text)


def expected(program):
  """TABLE's rows of `program`; verify's are its own and the training flags with its
  defaults."""
  if program != "verify":
    return TABLE[program]
  training = [row[:2] + (VERIFY_DEFAULTS.get(row[0], row[2]),) + row[3:]
              for row in TABLE["training"]]
  return sorted(training + TABLE["verify"])


@pytest.mark.parametrize("program", sorted(DEFINERS))
def test_a_programs_flags_are_the_table(program):
  values = flags.FlagValues()
  DEFINERS[program](values)
  assert [describe(values[name]) for name in sorted(values)] == expected(program)


def test_the_table_covers_every_program():
  assert sorted(TABLE) == sorted(DEFINERS)


STRATEGIES = ("local", "mirrored", "multi_worker", "parameter_server", "horovod",
              "collective_all_reduce")

# verify's training flags (not in its rows below) default to one small horovod run.
VERIFY_DEFAULTS = {"strategy": "horovod", "train_steps": 10, "learning_rate": 0.01}

# Sorted by name in each program, as --helpfull lists them.
TABLE = {
    'launch': [
        ('allow_every_interface', 'bool', False, {},
         "On the host network, run even where the job's servers would listen on every "
         'interface, reachable from other machines (no C compiler to build the library that '
         'keeps them on loopback: `make setup` builds it); without it such a job is refused.'),
        ('curves', 'bool', True, {},
         'When the job ends, draw model_dir/curves.png: loss, eval metrics and training '
         'rate against the step (matplotlib).'),
        ('elastic', 'bool', False, {},
         'horovod: elastic training; ranks come and go between --min_workers and '
         '--max_workers as the hosts change.'),
        ('evaluator', 'bool', False, {},
         'multi_worker, parameter_server: add an evaluator.'),
        ('hang_timeout_secs', 'int', 300, {'lower_bound': 0},
         'Stop the job (and restart it, with --max_restarts) when a training task of a '
         'local job makes no progress for this long, or a process of any task is stopped '
         '(SIGSTOP, a debugger) this long; 0 never does.'),
        ('horovod_controller', 'string enum', 'auto', {'values': ('auto', 'mpi', 'gloo')},
         'horovod: how horovodrun connects the ranks; auto picks MPI when Horovod was built '
         'with it (shared memory between ranks of one host), else Gloo.'),
        ('horovodrun_args', 'string', '', {},
         'horovod: more horovodrun options, passed as they are, e.g. '
         "'--fusion-threshold-mb=32 --cycle-time-ms=2'."),
        ('host', 'string', '127.0.0.1', {},
         'Address the tasks of a local job bind to.'),
        ('host_discovery_script', 'string', None, {},
         "--elastic: prints one 'host:slots' line per available host (default: a script "
         "that prints a file of this machine's slots, which you edit)."),
        ('hostfile', 'string', None, {},
         "horovod: a horovodrun hostfile, one 'host slots=N' line per machine."),
        ('hosts', 'string', None, {},
         'horovod: machines and their slots, host1:2,host2:2 (default: all ranks on '
         '127.0.0.1).'),
        ('instrument', 'string enum', 'auto', {'values': ('auto', 'off')},
         "auto: a program that does not import estimator_dist trains as written: its tasks "
         "start the job's strategy when they import TensorFlow, and its Estimators train, "
         "evaluate and export through the toolkit; off: it runs as it is."),
        ('isolation', 'string enum', 'auto', {'values': ('auto', 'private', 'host')},
         "auto: run a local job's tasks in their own network and process namespaces, where "
         'no other process can reach their ports and which end with the launcher (the host '
         'network where the machine cannot make them); private: refuse to run without them; '
         'host: the host network (loopback).'),
        ('max_restarts', 'int', 0, {'lower_bound': 0},
         'When a task fails, start the whole job again up to this many times; it resumes '
         'from the latest checkpoint.'),
        ('max_workers', 'int', None, {},
         '--elastic: most ranks (default --num_workers).'),
        ('min_workers', 'int', None, {},
         '--elastic: fewest ranks (default 1).'),
        ('mlflow_tracking_uri', 'string', None, {},
         'Record the job as a run of this MLflow tracking server (http://host:5000): the '
         "program's flags, evaluations, throughput, summary and exports (pip install "
         "'estimator_dist[tracking]')."),
        ('model_dir', 'string', None, {},
         "The job's model_dir unless the program's arguments give --model_dir; its tasks "
         "find it in ESTIMATOR_DIST_MODEL_DIR (default: a new temporary directory)."),
        ('network_interface', 'string', None, {},
         'horovod on several hosts: the interface of their private network, which Gloo and '
         'MPI bind to (e.g. eth1).'),
        ('num_ps', 'int', None, {'lower_bound': 0},
         'parameter_server: ps tasks (default 1).'),
        ('num_workers', 'int', 2, {'lower_bound': 1},
         'Training processes (mirrored: replicas).'),
        ('preemption_grace_secs', 'float', 25.0, {'lower_bound': 0.0},
         'SIGTERM or SIGUSR1 to the launcher or a task preempts the job: every task stops '
         'at one agreed step, the chief saves a checkpoint there, and the launcher exits '
         'with code 200; running the same command again resumes from it. The tasks get this '
         'long, then (or at a second signal) they are stopped at once. 0: those signals '
         'stop the job at once, as Ctrl-C does.'),
        ('progress_secs', 'float', 30.0, {'lower_bound': 0.0},
         "Every this many seconds, a local job's launcher prints how far training is: step "
         'of the last, steps and examples per second, ETA, the slowest task, the latest '
         'evaluation; 0 never does.'),
        ('shutdown_timeout_secs', 'int', 300, {'lower_bound': 1},
         'After training ends, seconds ps and evaluator tasks get to exit.'),
        ('startup_timeout_secs', 'int', 120, {'lower_bound': 0},
         'A training task that has not started training this long after it started exits, '
         'naming its phase and the peers that do not answer (and the job stops, or restarts '
         'with --max_restarts); 0 never does.'),
        ('strategy', 'string enum', 'multi_worker', {'values': STRATEGIES},
         "Distribution strategy; the program's tasks find it in their environment "
         "(ESTIMATOR_DIST_STRATEGY)."),
        ('terminal', 'string enum', 'default', {'values': ('quiet', 'default', 'all')},
         "What the terminal shows of the tasks' output. default: all but TensorFlow's "
         "start-up notes, INFO lines and deprecation warnings; quiet: only the toolkit's "
         "lines, warnings, errors and tracebacks; all: every line. Every line is kept in "
         "model_dir/estimator_dist/logs/, whatever is shown."),
    ],
    'slurm': [
        ('account', 'string', None, {},
         '#SBATCH --account.'),
        ('constraint', 'string', None, {},
         "#SBATCH --constraint, e.g. 'skylake&ib'."),
        ('cpus_per_task', 'int', None, {'lower_bound': 1},
         '#SBATCH --cpus-per-task.'),
        ('evaluator', 'bool', False, {},
         'multi_worker, parameter_server: add an evaluator.'),
        ('exclusive', 'bool', False, {},
         '#SBATCH --exclusive: whole nodes.'),
        ('gpus_per_task', 'int', None, {'lower_bound': 0},
         '#SBATCH --gpus-per-task.'),
        ('gres', 'string', None, {},
         '#SBATCH --gres, e.g. gpu:2.'),
        ('hang_timeout_secs', 'int', 300, {'lower_bound': 0},
         "End the job's step (exit code 124) when a training task's heartbeat stops this "
         'long, as `launch` does: a stalled job does not hold its nodes until its time '
         'limit; 0: never.'),
        ('instrument', 'string enum', 'auto', {'values': ('auto', 'off')},
         'auto: a program that does not import estimator_dist trains as written (as under '
         '`estimator-dist launch`); off: it runs as it is.'),
        ('job_name', 'string', 'estimator-dist', {},
         '#SBATCH --job-name.'),
        ('mem', 'string', None, {},
         '#SBATCH --mem per node, e.g. 32G.'),
        ('model_dir', 'string', None, {},
         "The job's model_dir, where the Estimators of a program that names none train "
         "(default: the program's --model_dir); the job's mailbox goes there (else into the "
         "directory the job is submitted from)."),
        ('nodes', 'int', None, {'lower_bound': 1},
         'Nodes to allocate (default: SLURM decides).'),
        ('num_ps', 'int', None, {'lower_bound': 0},
         'parameter_server: ps tasks (default 1).'),
        ('num_workers', 'int', 2, {'lower_bound': 1},
         'Training tasks (mirrored: replicas of one task).'),
        ('output', 'string', None, {},
         "#SBATCH --output, e.g. %x-%j.out (default SLURM's, slurm-%j.out; a directory in "
         'it must exist).'),
        ('overcommit', 'bool', None, {},
         '#SBATCH --overcommit: let tasks share CPUs. Default: added when the job has more '
         "tasks than the partition's nodes have CPUs (read with sinfo)."),
        ('partition', 'string', None, {},
         '#SBATCH --partition.'),
        ('port_base', 'int', None, {'lower_bound': 1, 'upper_bound': 65000},
         "First TensorFlow server port on each node (default: one of the job's own, from "
         'its job id, so jobs that share a node, up to 32 tasks of each there, do not '
         'collide).'),
        ('preamble', 'multi string', [], {},
         "A line of shell the job runs before its tasks start, e.g. 'module load "
         "cuda/12.2' or 'source ~/venv/bin/activate'; the tasks run `python` as it then "
         'finds it;\n    repeat this option to specify a list of values'),
        ('preemption_grace_secs', 'float', 25.0, {'lower_bound': 0.0},
         '#SBATCH --signal=B:USR1@N: this long before the time limit, every task stops at '
         'one agreed step and the chief saves a checkpoint there; 0: no signal.'),
        ('progress_secs', 'float', 30.0, {'lower_bound': 0.0},
         "The job's progress lines in its output this often (the tasks beat in the job's "
         "mailbox); 0: none."),
        ('qos', 'string', None, {},
         '#SBATCH --qos.'),
        ('requeue', 'bool', True, {},
         '#SBATCH --requeue: after that save, the job requeues itself and resumes from the '
         'checkpoint.'),
        ('sbatch', 'multi string', [], {},
         'Any other #SBATCH option, as sbatch takes it, e.g. --sbatch=--mail-type=END '
         '--sbatch=--mail-user=me@site.org;\n    repeat this option to specify a list of '
         'values'),
        ('srun_mpi', 'string', 'pmix', {},
         'horovod: srun --mpi plugin that starts the ranks.'),
        ('strategy', 'string enum', 'multi_worker', {'values': STRATEGIES},
         "Distribution strategy; the program's tasks find it in their environment "
         "(ESTIMATOR_DIST_STRATEGY)."),
        ('time', 'string', None, {},
         '#SBATCH --time, e.g. 04:00:00.'),
    ],
    'k8s': [
        ('backoff_limit', 'int', 3, {'lower_bound': 0},
         "Restarts before the job is marked failed (a preemption's do not count in a "
         'JobSet).'),
        ('cpu', 'string', None, {},
         'CPU request and limit of each pod of every role, e.g. 4 (an MPI launcher pod: '
         '500m).'),
        ('evaluator', 'bool', False, {},
         'multi_worker, parameter_server: add an evaluator.'),
        ('gpus', 'int', 0, {'lower_bound': 0},
         'nvidia.com/gpu per training pod.'),
        ('image', 'string', None, {},
         'Container image with the program and estimator_dist.'),
        ('instrument', 'string enum', 'auto', {'values': ('auto', 'off')},
         'auto: a program that does not import estimator_dist trains as written (as under '
         '`estimator-dist launch`; it needs a model_dir on --volume_claim); off: it runs '
         'as it is.'),
        ('kubeflow_v1', 'bool', False, {},
         "Print Training Operator v1's TFJob and MPIJob (kubeflow.org/v1), for clusters "
         "still on it, instead of a JobSet (tf.distribute) and the MPI Operator's MPIJob "
         'v2beta1 (horovod).'),
        ('memory', 'string', None, {},
         'Memory request and limit of each pod of every role, e.g. 8Gi (an MPI launcher '
         'pod: 512Mi).'),
        ('model_dir', 'string', None, {},
         "The job's model_dir, where the Estimators of a program that names none train "
         "(default: the program's --model_dir)."),
        ('name', 'string', 'estimator-dist', {},
         'Job name (a DNS label).'),
        ('namespace', 'string', None, {},
         "Namespace of the job (default: kubectl's)."),
        ('network_policy', 'bool', True, {},
         "Also print a NetworkPolicy that lets only the job's own pods reach its pods: "
         'their servers have no authentication.'),
        ('num_ps', 'int', None, {'lower_bound': 0},
         'parameter_server: ps tasks (default 1).'),
        ('num_workers', 'int', 2, {'lower_bound': 1},
         'Training pods (mirrored: replicas in one pod).'),
        ('pod_template', 'string', None, {},
         'A YAML file with a PodTemplateSpec (metadata, spec) merged into every pod: '
         'nodeSelector, tolerations, affinity, serviceAccountName, imagePullSecrets, '
         'volumes, env, securityContext... A field the job sets itself is refused there.'),
        ('port', 'int', 2222, {'lower_bound': 1},
         'TensorFlow server port in each pod.'),
        ('preemption_grace_secs', 'float', 25.0, {'lower_bound': 0.0},
         "An evicted pod's tasks get this long to stop at one agreed step and save a "
         "checkpoint there (the pods' terminationGracePeriodSeconds is 15s longer); 0: "
         'SIGTERM ends them at once.'),
        ('queue', 'string', None, {},
         "Kueue's LocalQueue for the job (the label kueue.x-k8s.io/queue-name); Kueue "
         "admits it by its pods' requests: give --cpu and --memory."),
        ('restart_policy', 'string enum', None, {'values': ('OnFailure', 'Never', 'Always', 'ExitCode')},
         "The restart policy of an MPIJob's pods, and with --kubeflow_v1 of a TFJob's "
         '(default OnFailure); a JobSet has none: it starts all its pods again when one '
         'fails, --backoff_limit times.'),
        ('strategy', 'string enum', 'multi_worker', {'values': ('local', 'mirrored', 'multi_worker', 'parameter_server', 'horovod', 'collective_all_reduce')},
         "Distribution strategy; the program's tasks find it in their environment "
         '(ESTIMATOR_DIST_STRATEGY).'),
        ('volume_claim', 'string', None, {},
         'A PersistentVolumeClaim for the shared model_dir, as CLAIM:MOUNT_PATH.'),
    ],
    'sweep': [
        ('dashboard', 'bool', False, {},
         "Serve optuna-dashboard over the sweep's study on 127.0.0.1 while it runs, and "
         'after it until Ctrl-C.'),
        ('dashboard_port', 'int', 0, {'lower_bound': 0},
         "--dashboard's port (0: a free one, printed)."),
        ('direction', 'string enum', 'maximize', {'values': ('maximize', 'minimize')},
         'Whether a larger or a smaller metric is better.'),
        ('engine', 'string enum', 'local', {'values': ('local', 'slurm', 'spark')},
         'local: run the trials here; slurm: create the study and print an sbatch job array '
         'of --parallel runners that share it; spark: run each trial as a Spark job (a '
         'barrier stage of its processes).'),
        ('metric', 'string', 'accuracy', {},
         'The eval metric the sweep optimises.'),
        ('min_resource_steps', 'int', None, {},
         "asha, hyperband: the steps of the first rung (default: Optuna's, from the first "
         "finished trial's evaluations)."),
        ('mlflow_tracking_uri', 'string', None, {},
         "Record the sweep as a run of this MLflow tracking server, each trial's job a run "
         "nested in it (pip install 'estimator_dist[tracking]')."),
        ('parallel', 'int', 1, {'lower_bound': 1},
         'Trials at once, each on its own CPUs.'),
        ('pbt_interval_steps', 'int', None, {},
         'pbt: global steps between two exploits.'),
        ('pbt_keep', 'comma separated list of strings', [], {},
         "pbt: values an exploiting member takes unperturbed (those that shape the model's "
         'variables).'),
        ('pbt_quantile', 'float', 0.25, {},
         'pbt: the share of members at the bottom that copies the top.'),
        ('population', 'int', None, {},
         'pbt: members training side by side.'),
        ('progress_secs', 'float', 30.0, {'lower_bound': 0.0},
         'Every this many seconds, say how many trials finished, run and failed, the best '
         'so far and the ETA; 0 never does.'),
        ('prune_after_steps', 'int', 1, {'lower_bound': 0},
         'median: steps a trial trains before it can be pruned (1: not at the evaluation of '
         'its initial values).'),
        ('prune_after_trials', 'int', 2, {'lower_bound': 0},
         'median: trials that finish before any is pruned.'),
        ('pruner', 'string enum', 'none', {'values': ('none', 'median', 'hyperband', 'asha')},
         'Stops unpromising trials from their evaluations.'),
        ('reduction_factor', 'int', None, {},
         'asha, hyperband: each rung is this many times the last, and keeps 1/this of the '
         'trials (default 4 for asha, 3 for hyperband).'),
        ('report', 'bool', False, {},
         "Only write the report of --sweep_dir's study."),
        ('retry_failed', 'bool', True, {},
         'A grid or --zip sweep run again runs each point whose trial failed once more; '
         '--noretry_failed leaves them failed: the sweep runs the rest, reports them and '
         'exits 1 naming them.'),
        ('sampler', 'string enum', 'tpe', {'values': ('tpe', 'random', 'grid')},
         "tpe and random: Optuna's; grid: every choice combination."),
        ('scheduler', 'string enum', 'none', {'values': ('none', 'pbt')},
         'pbt: population-based training of --population members, the bottom --pbt_quantile '
         "taking the top's checkpoints and perturbed values every --pbt_interval_steps."),
        ('seed', 'int', None, {},
         "The sampler's seed."),
        ('space', 'string', None, {},
         'What to search: NAME=KIND(ARGS) entries separated by spaces, each NAME a flag of '
         'the program; KIND uniform, loguniform, int, logint (low,high) or choice(a,b,...).'),
        ('spark_master', 'string', None, {},
         '--engine=spark: local[N] or spark://host:port (default: the master spark-submit '
         'gives).'),
        ('storage', 'string', None, {},
         "The study's storage: an SQLAlchemy URL (postgresql://...) or journal:PATH for "
         'sweeps across machines (default: SQLite in --sweep_dir).'),
        ('strategy', 'string enum', 'local', {'values': STRATEGIES},
         "The strategy every trial's job trains with."),
        ('sweep_dir', 'string', None, {},
         "Trials' model_dirs, the study, the report."),
        ('trials', 'int', 10, {'lower_bound': 1},
         'Trials to finish (complete, pruned or diverged).'),
        ('workers_per_trial', 'int', 1, {'lower_bound': 1},
         'Training processes of each trial.'),
        ('zip', 'bool', False, {},
         'The i-th trial takes the i-th value of every choice list.'),
    ],
    'verify': [
        ('join_batches', 'int', 1, {'lower_bound': 1},
         "Internal: train on this many of the program's batches joined into one."),
        ('module', 'string', None, {},
         'Module with model_fn and input_fn(params) (or give a program after --).'),
        ('num_workers', 'int', 2, {'lower_bound': 1},
         'Workers of the distributed run.'),
        ('reference_learning_rate', 'float', None, {},
         'Learning rate of the one-worker run (default --learning_rate).'),
        ('tolerance', 'float', 1e-05, {},
         'Largest relative weight difference that passes.'),
        ('train_only', 'bool', False, {},
         'Internal: train --module as one task of a run.'),
        ('work_dir', 'string', None, {},
         'Where the two runs write (default: a new temp dir).'),
    ],
    'progress': [
        ('hang_timeout_secs', 'float', 0.0, {'lower_bound': 0.0},
         "End the job when a task's heartbeat stops this long; 0: never."),
        ('mailbox', 'string', None, {},
         "The job's mailbox, where its tasks beat (their ESTIMATOR_DIST_MAILBOX); required."),
        ('model_dir', 'string', None, {},
         "The job's model_dir (its evaluations)."),
        ('on_hang', 'string', None, {},
         "The shell command that ends the job's tasks when one hangs (the sbatch script's: "
         'scancel of its step).'),
        ('progress_secs', 'float', 30.0, {'lower_bound': 0.0},
         'A line this often; 0: none.'),
    ],
    'training': [
        ('backward_passes_per_step', 'int', 1, {'lower_bound': 1},
         'horovod: micro-batches accumulated per all-reduce.'),
        ('batch_size', 'int', 32, {'lower_bound': 1},
         'Batch size per worker (per replica).'),
        ('best_direction', 'string enum', None, {'values': ('maximize', 'minimize')},
         'Whether a higher --best_metric is better (maximize) or a lower (minimize; the '
         'default for loss only).'),
        ('best_metric', 'string', 'loss', {},
         'The eval metric that ranks the checkpoints --keep_best_checkpoints keeps.'),
        ('collective_timeout_secs', 'float', None, {},
         'multi_worker: seconds before a collective op fails.'),
        ('communication', 'string enum', 'auto', {'values': ('auto', 'ring', 'nccl')},
         'multi_worker: collective implementation.'),
        ('cpu_affinity', 'string enum', 'auto', {'values': ('auto', 'none')},
         'auto: pin each training process that shares a host with others to its own share '
         'of the CPUs; none: leave placement to the OS.'),
        ('early_stopping_metric', 'string', 'loss', {},
         'Eval metric early stopping watches.'),
        ('early_stopping_mode', 'string enum', 'min', {'values': ('min', 'max')},
         'min: the metric should decrease; max: increase.'),
        ('early_stopping_patience_steps', 'int', None, {'lower_bound': 1},
         'Stop every task when the eval metric has not improved for this many steps.'),
        ('estimator_dist_training_flags', 'bool', True, {},
         'Internal: the training flags are defined.'),
        ('eval_steps', 'int', None, {'lower_bound': 1},
         'Eval batches; default the whole eval set.'),
        ('eval_throttle_secs', 'int', 60, {'lower_bound': 0},
         'Least seconds between evaluations.'),
        ('eval_timeout_secs', 'float', None, {'lower_bound': 0.0},
         'Stop an evaluation (and fail) after this many seconds (0: never); default 10x the '
         'longest so far, at least 1800 s.'),
        ('exporters', 'comma separated list of strings', [], {},
         'Serving exports after evaluations, of latest, best, final (the program passes '
         'serving_input_receiver_fn).'),
        ('exports_to_keep', 'int', 5, {'lower_bound': 1},
         'Newest exports the latest and best exporters keep.'),
        ('global_batch_size', 'int', None, {'lower_bound': 1},
         'horovod: examples per update, whatever the number of ranks; each rank accumulates '
         'micro-batches of --batch_size.'),
        ('gradient_predivide_factor', 'float', 1.0, {},
         'horovod: divide gradients by this before the sum, the rest after.'),
        ('hvd_autotune', 'bool', False, {},
         'horovod: let Horovod tune its fusion buffer and cycle time while it trains.'),
        ('hvd_compression', 'string enum', 'none', {'values': ('none', 'fp16')},
         'horovod: gradient compression.'),
        ('hvd_reduction', 'string enum', 'average', {'values': ('average', 'sum', 'adasum')},
         'horovod: how gradients are combined.'),
        ('hvd_timeline', 'string', None, {},
         "horovod: write Horovod's timeline (a Chrome trace, JSON) to this file; rank 0 "
         'writes it, under any engine.'),
        ('inter_op_threads', 'int', 0, {'lower_bound': 0},
         'TensorFlow inter-op threads (0: TF default).'),
        ('intra_op_threads', 'int', 0, {'lower_bound': 0},
         'TensorFlow intra-op threads (0: TF default).'),
        ('keep_best_checkpoints', 'int', 0, {'lower_bound': 0},
         'Keep the best this many checkpoints by --best_metric in model_dir/best, which '
         'keep_checkpoint_max never deletes; 0: none.'),
        ('keep_checkpoint_every_n_hours', 'float', None, {},
         "Also keep one checkpoint of every this many hours (default: the Estimator's "
         "RunConfig's)."),
        ('keep_checkpoint_max', 'int', None, {'lower_bound': 0},
         "Newest checkpoints kept; 0 keeps all (default: the Estimator's RunConfig's, else "
         "5)."),
        ('learning_rate', 'float', 0.001, {'lower_bound': 0.0},
         'Single-worker learning rate.'),
        ('lr_scaling', 'string enum', None, {'values': ('linear', 'sqrt', 'none')},
         'Learning-rate scaling with replicas (default: linear if synchronous, none for '
         'parameter_server).'),
        ('model_dir', 'string', None, {},
         'Checkpoint directory shared by all tasks.'),
        ('num_devices', 'int', None, {'lower_bound': 1},
         'mirrored: replicas on this machine.'),
        ('profile_steps', 'string', None, {},
         "FIRST:LAST: record TensorFlow's profiler from global step FIRST to LAST on every "
         "training task, into model_dir/plugins/profile for TensorBoard's Profile tab."),
        ('profile_tasks', 'comma separated list of strings', [], {},
         'With --profile_steps: only these tasks (chief:0,worker:1); default every training '
         'task.'),
        ('random_seed', 'int', None, {},
         "Graph seed shared by all tasks (default: the Estimator's RunConfig's "
         "tf_random_seed, else 0)."),
        ('remote_cluster', 'string', None, {},
         'parameter_server: train as a standalone client of standard TensorFlow servers, '
         'given as JSON: \'{"worker": [...], "ps": [...]}\'.'),
        ('save_checkpoints_steps', 'int', None, {'lower_bound': 1},
         'Checkpoint interval in steps.'),
        ('strategy', 'string enum', 'local', {'values': STRATEGIES},
         'Distribution strategy.'),
        ('train_steps', 'int', 1000, {'lower_bound': 1},
         'Global step to train to.'),
        ('warmup_steps', 'int', None, {'lower_bound': 0},
         'Steps of linear warmup to the scaled rate.'),
    ],
}
