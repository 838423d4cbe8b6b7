"""The environment variables a job's engine and its tasks agree on, each named once.

An engine (the launcher, SLURM's sbatch script, Kubernetes, Spark, a sweep) sets them
when it starts a task, with the values `task_env.task_environment` gives; the task's own
modules read them. Only names live here, so every layer can import it without TensorFlow.
The strings are the contract: a job started by an older launcher, a user's shell or the
preload library (`contract/native/bind_address.c` reads BIND_ADDRESS and BIND_INTERFACE) uses
them as they are.
"""

# Set by the launcher for local tasks, by the user (0.0.0.0: keep TensorFlow's binds) and
# by a task that starts itself again with the preload library (own_address: its own
# address, or 0.0.0.0 where it cannot know it); read by the preload library.
BIND_ADDRESS = "ESTIMATOR_DIST_BIND_ADDRESS"
# Set by the launcher for a Horovod job across hosts (its --network_interface); read by
# the preload library (that interface's address, on each host) and rank_address.
BIND_INTERFACE = "ESTIMATOR_DIST_BIND_INTERFACE"
# Set by the user or a test (default ~/.cache/estimator_dist); read by user_cache: where
# `preload` builds the preload library (`make setup` does, once) and horovodrun_entry
# records Horovod's answers about its build.
CACHE = "ESTIMATOR_DIST_CACHE"
# Set by the user or the test suite (for its own process); read by own_address: this
# process must not start itself again (execve), so it goes without the preload library
# (its servers keep TensorFlow's binds, and TensorFlow's request ids may repeat).
NO_RESTART = "ESTIMATOR_DIST_NO_RESTART"
# Set by a task that starts its program again (own_address.restart: the process id, which
# execve keeps); read by own_address.restartable: that process never starts again, with
# or without the library (a setuid interpreter's loader drops LD_PRELOAD).
STARTED_AGAIN = "ESTIMATOR_DIST_STARTED_AGAIN"

# Set by every engine (the job's --strategy: the launcher, SLURM, Kubernetes, Spark); read
# by a program's training flags (`define_flags`: the default of --strategy) and by
# `run_program`, which starts that strategy. The program's command runs as given: nothing
# is appended to its arguments.
STRATEGY = "ESTIMATOR_DIST_STRATEGY"
# Set by the launcher (the job's model_dir: the program's --model_dir, the launcher's, or a
# new directory); read by `define_flags`: the default of --model_dir.
MODEL_DIR = "ESTIMATOR_DIST_MODEL_DIR"

# Set by the launcher (--instrument=auto) for a program that does not import
# estimator_dist: its main file, with the `sitecustomize` of estimator_dist/instrument/site
# first on PYTHONPATH; read by that sitecustomize, which instruments that program alone
# (not horovodrun, not another program the task starts).
INSTRUMENT = "ESTIMATOR_DIST_INSTRUMENT"

# Set by the launcher, Spark, SLURM and Kubernetes engines for `mirrored` (the job's
# --num_workers); read by the mirrored strategy: how many replicas a CPU-only machine
# splits into.
NUM_DEVICES = "ESTIMATOR_DIST_NUM_DEVICES"
# Set by the sbatch script of `estimator-dist slurm` (or the user); read by slurm_env to
# derive the step's cluster: ps tasks, an evaluator (1) or not, the first port per host
# (--port_base; when unset, the job's own from its id: task_env.job_port_base).
NUM_PS = "ESTIMATOR_DIST_NUM_PS"
EVALUATOR = "ESTIMATOR_DIST_EVALUATOR"
PORT_BASE = "ESTIMATOR_DIST_PORT_BASE"

# Set by the launcher, SLURM and Kubernetes engines from --preemption_grace_secs, by Spark
# at its default (or the user); read by preemption: seconds, a float written as `%g`
# (task_env.DEFAULT_PREEMPTION_GRACE_SECS when unset); 0 keeps SIGTERM's default (it ends
# the task at once).
PREEMPTION_GRACE_SECS = "ESTIMATOR_DIST_PREEMPTION_GRACE_SECS"
# Set by the launcher for every task ("pid:start time" of the launcher); read by the
# watchdog, which ends the task when that launcher is gone.
LAUNCHER = "ESTIMATOR_DIST_LAUNCHER"
# Set by the launcher from --startup_timeout_secs (or the user); read by the watchdog.
STARTUP_TIMEOUT_SECS = "ESTIMATOR_DIST_STARTUP_TIMEOUT_SECS"
# Set by the engines that give a job a mailbox (the launcher for local tasks; SLURM and
# Spark in the shared model_dir), a directory new for each attempt; read by the tasks
# (contract/mailbox.py): where they post their summary, that they joined, the chief's
# model_dir, an instrumented program's rounds, preemption's save and their heartbeats.
MAILBOX = "ESTIMATOR_DIST_MAILBOX"
# Set by the launcher (the model_dir whose lock it holds for the whole job); read by
# model_dir_lock, so the chief does not take that lock itself.
MODEL_DIR_LOCK = "ESTIMATOR_DIST_MODEL_DIR_LOCK"
# Set by a sweep (experiments.trial_job) for a trial's job; read by early_stopping (the
# chief watches the model_dir for the sweep's stop request) and by an instrumented
# program's tasks (its Estimators train in the trial's model_dir, over their own).
TRIAL = "ESTIMATOR_DIST_TRIAL"
# Set by the launcher's and the sweep's --mlflow_tracking_uri (or the user, for SLURM,
# Kubernetes, Spark); read by the chief (training.job_tracking): the MLflow server.
MLFLOW_TRACKING_URI = "ESTIMATOR_DIST_MLFLOW_TRACKING_URI"
# Set by a sweep for a trial's job; read by its chief: the MLflow run to write into (the
# trial's run, nested in the sweep's).
MLFLOW_RUN_ID = "ESTIMATOR_DIST_MLFLOW_RUN_ID"
# Set in the pods of a JobSet (`estimator-dist k8s`) from their completion index, through
# the downward API. Read by no module: Kubernetes expands it (`$(NAME)`) into the pod's
# TF_CONFIG as its task's index.
KUBERNETES_POD_INDEX = "ESTIMATOR_DIST_POD_INDEX"
# Set in the pods of a JobSet from their JobSet's uid, through the downward API. Read by
# no module: Kubernetes expands it into MAILBOX (an instrumented program's), new for each
# JobSet.
KUBERNETES_JOBSET_UID = "ESTIMATOR_DIST_JOBSET_UID"
# Set in the pods of a JobSet from its restart count, through the downward API. Read by no
# module: Kubernetes expands it into MAILBOX, new for each restart of the JobSet.
KUBERNETES_JOBSET_RESTART = "ESTIMATOR_DIST_JOBSET_RESTART"
# Set in the pods of an MPIJob (`estimator-dist k8s`) from their uid, through the downward
# API. Read by no module: Kubernetes expands it into the launcher pod's MAILBOX (for an
# instrumented program), new for each start of the launcher, which mpirun passes on.
KUBERNETES_POD_UID = "ESTIMATOR_DIST_POD_UID"
