"""A job's MLflow run: what the job was, how it went and what it made; never failing or
slowing the job.

Whoever is on the network the server is on writes the run: the launcher, for the jobs it
starts (their tasks may have a private network: jobs.launch_tracking), or the chief of a
job that an engine started with env_vars.MLFLOW_TRACKING_URI set (training.job_tracking).
Both record the job the same way (`record_job`), from its model_dir: the parameters the
chief wrote (`estimator_dist/params.json`: the program's flags, strategy, workers, global
batch, train steps) and the learning rate as the decorator scaled it
(`estimator_dist/learning_rate.json`), every evaluation at its step (`eval_<metric>`),
the training loss and rate, the summary's numbers (`summary/...`), and, for a job that
succeeded, the newest export of each exporter (the SavedModel, under
`export/<name>/<timestamp>`). The metrics are the model_dir's: a job that resumed an
earlier one's model_dir has that one's evaluations too.

Tracking runs before training starts and after it ended, never during it. Each request
gets one try of at most REQUEST_TIMEOUT_SECS per read (unless MLFLOW_HTTP_REQUEST_TIMEOUT
says otherwise), and each call to the server (a run's creation, a batch, a tag) at most
CALL_DEADLINE_SECS in all (an export's upload UPLOAD_DEADLINE_SECS): a server that answers
a byte at a time resets every read's timeout, never the call's. The first call that fails
or passes its deadline, or MLflow missing, is warned about once, naming the server and
the error, and neither that run nor the runs made from it (a sweep's trials) are written
again: a server delays a job's training by CALL_DEADLINE_SECS at most. MLflow is imported
only when a run is started (`pip install estimator_dist[tracking]`).
"""

import json
import os
import threading
import time
from typing import Callable, Optional

from estimator_dist import extras
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import env_vars

REQUEST_TIMEOUT_SECS = 5
CALL_DEADLINE_SECS = 15
UPLOAD_DEADLINE_SECS = 300  # After training: it delays the job's end, not its training.
EXPERIMENT = "estimator_dist"  # Unless MLFLOW_EXPERIMENT_NAME names another.
_BATCH = 500  # Metrics per request (MLflow takes at most 1000).
PARAMS = os.path.join(checkpoint_names.TOOLKIT_DIR, "params.json")  # By the chief.
_RATE = os.path.join(checkpoint_names.TOOLKIT_DIR, "learning_rate.json")  # rate_record's.
_TRAINING_SCALARS = {"loss": "train_loss", "global_step/sec": "train_steps_per_sec"}
# What this process set for MLflow's requests, kept from the tasks it starts.
SET_HERE = {}


class _Connection:
  """The client that every run made from one start shares, until a request fails."""

  def __init__(self, uri, warn):
    self.uri, self._warn, self.client = uri, warn, None
    try:  # The import and the client fail too (no mlflow, a URI it cannot read).
      self.client = _client(uri)
    except Exception as e:  # pylint: disable=broad-except
      self._failed(e)

  def call(self, method, *args, deadline_secs=CALL_DEADLINE_SECS):
    """method(client, *args), or None once a call failed or passed its deadline."""
    if self.client is None:
      return None
    try:
      return _within(method, self.client, *args, deadline_secs=deadline_secs)
    except Exception as e:  # pylint: disable=broad-except
      self._failed(e)
      return None

  def _failed(self, error):
    self.client = None
    first = str(error).splitlines()[0] if str(error) else ""
    self._warn(f"MLflow tracking at {self.uri} stopped: {type(error).__name__}: {first}; "
               f"training goes on untracked")


class Run:
  """One MLflow run, written until the first failed request of its connection."""

  def __init__(self, connection, run_id):
    self._connection, self.run_id = connection, run_id

  @classmethod
  def start(cls, uri, *, warn: Callable[[str], None], name=None, tags=None,
            run_id=None) -> Optional["Run"]:
    """The run `run_id`, or a new one; None, warned, when it cannot be had."""
    for variable, value in (("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0"),
                            ("MLFLOW_HTTP_REQUEST_TIMEOUT", str(REQUEST_TIMEOUT_SECS))):
      if variable not in os.environ:  # MLflow's defaults retry for minutes.
        os.environ[variable] = SET_HERE[variable] = value
    connection = _Connection(uri, warn)
    if connection.client is None:
      return None
    run = cls(connection, run_id)
    return run.child(name, tags) if run_id is None else run

  def child(self, name, tags=None):
    """A new run on the same connection (nested in this one when it has an id); None,
    warned, when it cannot be made."""
    tags = {k: str(v)[:5000] for k, v in (tags or {}).items()}
    if self.run_id:
      tags["mlflow.parentRunId"] = self.run_id
    run_id = self._connection.call(_create_run, name, tags)
    return Run(self._connection, run_id) if run_id else None

  def log_params(self, params):
    from mlflow.entities import Param  # pylint: disable=g-import-not-at-top
    items = [Param(str(k), str(v)[:6000]) for k, v in params.items() if v is not None]
    for i in range(0, len(items), 100):
      self._connection.call(lambda c, chunk: c.log_batch(self.run_id, params=chunk),
                            items[i:i + 100])

  def log_metrics(self, points):
    """points: (key, value, step) each."""
    from mlflow.entities import Metric  # pylint: disable=g-import-not-at-top
    now = int(time.time() * 1000)
    items = [Metric(key, float(value), now, int(step)) for key, value, step in points]
    for i in range(0, len(items), _BATCH):
      self._connection.call(lambda c, chunk: c.log_batch(self.run_id, metrics=chunk),
                            items[i:i + _BATCH])

  def set_tags(self, tags):
    for key, value in tags.items():
      self._connection.call(lambda c: c.set_tag(self.run_id, key, str(value)[:5000]))

  def log_artifacts(self, local_dir, artifact_path):
    self._connection.call(lambda c: c.log_artifacts(self.run_id, local_dir, artifact_path),
                          deadline_secs=UPLOAD_DEADLINE_SECS)

  def end(self, status):
    """status: FINISHED, FAILED or KILLED."""
    self._connection.call(lambda c: c.set_terminated(self.run_id, status=status))


def job_run(uri, *, model_dir, log, env=os.environ, tags=None):
  """The run of the job of `model_dir`: the one a sweep made for it (env_vars.MLFLOW_RUN_ID
  in `env`), or a new one named after the model_dir; None when it cannot be had. `log`
  gets one line: which run, or why none."""
  run = Run.start(uri, warn=log, run_id=env.get(env_vars.MLFLOW_RUN_ID),
                  name=os.path.basename(os.path.normpath(model_dir)),
                  tags={"estimator_dist.model_dir": model_dir, **(tags or {})})
  if run is not None:
    log(f"tracked in MLflow at {uri}, run {run.run_id}")
  return run


class DeadlinePassed(Exception):
  """A call to the tracking server did not end within its deadline."""


def _within(function, *args, deadline_secs):
  """function(*args), run in a daemon thread waited for at most `deadline_secs`: its
  result, or its error; DeadlinePassed when it has not returned by then. The thread is
  left to its read (a daemon, it never holds the process's exit: concurrent.futures'
  threads would) and its connection is never used again."""
  outcome = {}

  def run():
    try:
      outcome["result"] = function(*args)
    except Exception as e:  # pylint: disable=broad-except
      outcome["error"] = e

  thread = threading.Thread(target=run, name="estimator_dist tracking", daemon=True)
  thread.start()
  thread.join(deadline_secs)
  if thread.is_alive():
    raise DeadlinePassed(f"no complete answer within {deadline_secs:g}s (the server or "
                         f"the network to it is too slow: check them, or leave tracking "
                         f"off)")
  if "error" in outcome:
    raise outcome["error"]
  return outcome.get("result")


def _client(uri):
  extras.check_installed("mlflow", "--mlflow_tracking_uri")
  import mlflow  # pylint: disable=g-import-not-at-top
  mlflow.set_tracking_uri(uri)  # Artifacts served by the server go by the global one.
  return mlflow.tracking.MlflowClient(tracking_uri=uri)


def _create_run(client, name, tags):
  experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME", EXPERIMENT)
  found = client.get_experiment_by_name(experiment)
  experiment_id = found.experiment_id if found else client.create_experiment(experiment)
  return client.create_run(experiment_id, run_name=name, tags=tags).info.run_id


def record_job(run, model_dir, *, succeeded, summary=None, params=None, failure=None):
  """Records the job of `model_dir` into `run` and ends it: FINISHED when it `succeeded`
  (with its exports), else FAILED with `failure` (None: KILLED, stopped). `params`: the
  chief's, else read from the model_dir; a remote model_dir gives only `params` and
  `summary`. Never raises."""
  try:
    local = not checkpoint_names.is_url(model_dir)
    if params is None and local:
      params = _read_json(os.path.join(model_dir, PARAMS))
    rate = _read_json(os.path.join(model_dir, _RATE)) if local else {}
    run.log_params({**(params or {}), **{f"lr_{key}": value for key, value in rate.items()}})
    run.log_metrics(_metrics(model_dir, summary, local))
  except Exception as e:  # pylint: disable=broad-except
    failure = failure or f"the job's files could not be read: {type(e).__name__}: {e}"
  if failure:
    run.set_tags({"estimator_dist.failure": failure})
  run.end("FINISHED" if succeeded else "FAILED" if failure else "KILLED")
  try:
    for name, export in _newest_exports(model_dir) if succeeded and local else []:
      run.log_artifacts(export, f"export/{name}/{os.path.basename(export)}")
  except OSError:
    pass  # An export directory that is not one: nothing to upload.


def _metrics(model_dir, summary, local):
  steps = int(summary.get("steps", 0)) if summary else 0
  points = [(f"summary/{key}", float(value), steps)
            for key, value in (summary or {}).items() if _is_number(value)]
  if local:
    from estimator_dist.outputs import event_files  # pylint: disable=g-import-not-at-top
    points += [(f"eval_{name}", value, step)
               for step, metrics in event_files.eval_metrics(model_dir).items()
               for name, value in metrics.items() if name != "global_step"]
    points += [(_TRAINING_SCALARS[tag], value, step)
               for step, scalars in event_files.scalars(model_dir).items()
               for tag, value in scalars.items() if tag in _TRAINING_SCALARS]
  return points


def _read_json(path):
  try:
    with open(path) as f:
      found = json.load(f)
    return found if isinstance(found, dict) else {}
  except (OSError, ValueError):
    return {}


def _newest_exports(model_dir):
  """(exporter name, its newest export directory) of each exporter of model_dir/export."""
  exports = os.path.join(model_dir, "export")
  found = []
  for name in sorted(os.listdir(exports)) if os.path.isdir(exports) else []:
    stamps = [d for d in os.listdir(os.path.join(exports, name)) if d.isdigit()]
    if stamps:
      found.append((name, os.path.join(exports, name, max(stamps, key=int))))
  return found


def _is_number(value):
  try:
    float(value)
    return True
  except (TypeError, ValueError):
    return False
