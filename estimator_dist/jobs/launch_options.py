"""How the local engine runs a job: LaunchOptions, each option with its flag.

`estimator-dist launch` defines its flags from these fields (option_flags), and a
library caller passes the same options as keywords; either way `__post_init__` checks
them. How horovodrun starts the ranks is horovodrun.HorovodRun, with its own flags.
"""

import dataclasses
from typing import Optional

from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.contract import task_env
from estimator_dist.jobs import horovodrun
from estimator_dist.option_flags import option
from estimator_dist.supervision import sandbox as sandbox_lib
from estimator_dist.supervision import shown_output

INSTRUMENT = ("auto", "off")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LaunchOptions:
  """How the local engine runs a job; each field's flag says what it does.

  A task whose port another process took (errors.PORT_IN_USE_EXIT_CODE) makes the job
  start again on new ports, up to launcher.PORT_RETRIES times, apart from max_restarts.
  A model_dir the launcher made is removed if the job fails before a checkpoint or
  finishes leaving it empty.
  """
  model_dir: Optional[str] = option(
      None, kind="string", help="The job's model_dir unless the program's arguments give "
      "--model_dir; its tasks find it in ESTIMATOR_DIST_MODEL_DIR (default: a new "
      "temporary directory).")
  instrument: str = option(
      "auto", kind="enum", values=INSTRUMENT,
      help="auto: a program that does not import estimator_dist trains as written: its "
      "tasks start the job's strategy when they import TensorFlow, and its Estimators "
      "train, evaluate and export through the toolkit; off: it runs as it is.")
  host: str = option("127.0.0.1", kind="string",
                     help="Address the tasks of a local job bind to.")
  isolation: str = option(
      "auto", kind="enum", values=sandbox_lib.ISOLATIONS,
      help="auto: run a local job's tasks in their own network and process namespaces, "
      "where no other process can reach their ports and which end with the launcher "
      "(the host network where the machine cannot make them); private: refuse to run "
      "without them; host: the host network (loopback).")
  allow_every_interface: bool = option(
      False, kind="bool", help="On the host network, run even where the job's servers "
      "would listen on every interface, reachable from other machines (no C compiler to "
      "build the library that keeps them on loopback: `make setup` builds it); without it "
      "such a job is refused.")
  max_restarts: int = option(
      0, kind="integer", lower_bound=0, help="When a task fails, start the whole job again "
      "up to this many times; it resumes from the latest checkpoint.")
  hang_timeout_secs: int = option(
      300, kind="integer", lower_bound=0, help="Stop the job (and restart it, with "
      "--max_restarts) when a training task of a local job makes no progress for this "
      "long, or a process of any task is stopped (SIGSTOP, a debugger) this long; 0 never "
      "does.")
  startup_timeout_secs: int = option(
      task_env.DEFAULT_STARTUP_TIMEOUT_SECS, kind="integer", lower_bound=0,
      help="A training task that has not started training this long after it started "
      "exits, naming its phase and the peers that do not answer (and the job stops, or "
      "restarts with --max_restarts); 0 never does.")
  shutdown_timeout_secs: int = option(
      300, kind="integer", lower_bound=1,
      help="After training ends, seconds ps and evaluator tasks get to exit.")
  progress_secs: float = option(
      30.0, kind="float", lower_bound=0.0, help="Every this many seconds, a local job's "
      "launcher prints how far training is: step of the last, steps and examples per "
      "second, ETA, the slowest task, the latest evaluation; 0 never does.")
  terminal: str = option(
      "default", kind="enum", values=shown_output.LEVELS,
      help="What the terminal shows of the tasks' output. default: all but TensorFlow's "
      "start-up notes, INFO lines and deprecation warnings; quiet: only the toolkit's "
      "lines, warnings, errors and tracebacks; all: every line. Every line is kept in "
      "model_dir/estimator_dist/logs/, whatever is shown.")
  curves: bool = option(
      True, kind="bool", help="When the job ends, draw model_dir/curves.png: loss, eval "
      "metrics and training rate against the step (matplotlib).")
  mlflow_tracking_uri: Optional[str] = option(
      None, kind="string", help="Record the job as a run of this MLflow tracking server "
      "(http://host:5000): the program's flags, evaluations, throughput, summary and "
      "exports (pip install 'estimator_dist[tracking]').")
  horovod: horovodrun.HorovodRun = horovodrun.HorovodRun()
  preemption_grace_secs: float = option(
      task_env.DEFAULT_PREEMPTION_GRACE_SECS, kind="float", lower_bound=0.0,
      help="SIGTERM or SIGUSR1 to the launcher or a task preempts the job: every task stops "
      "at one agreed step, the chief saves a checkpoint there, and the launcher exits with "
      f"code {errors.PREEMPTED_EXIT_CODE}; running the same command again resumes from it. "
      "The tasks get this long, then (or at a second signal) they are stopped at once. 0: "
      "those signals stop the job at once, as Ctrl-C does.")

  def __post_init__(self):
    option_flags.check_declared(self)
    if self.mlflow_tracking_uri:
      errors.check_installed("mlflow", "--mlflow_tracking_uri")
