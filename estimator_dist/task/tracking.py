"""A job's MLflow run: what the job was, how it went and what it made; never failing or
slowing the job.

Whoever is on the network the server is on writes the run: the launcher, for the jobs it
starts (their tasks may have a private network: jobs.launcher), or the chief of a job
that an engine started with env_vars.MLFLOW_TRACKING_URI set (`training.job_tracking`).
Both record the job the same way (`record_job`), from its model_dir: the parameters the
chief wrote (`estimator_dist/params.json`: the program's flags and estimator_dist's,
strategy, workers, global batch, train steps) and the learning rate as the decorator
scaled it (`estimator_dist/learning_rate.json`), every evaluation at its step
(`eval_<metric>`), the training loss and rate, the summary's numbers (`summary/...`), and
the newest export of each exporter (the SavedModel, under `export/<name>/<timestamp>`).

Each request gets one try of at most REQUEST_TIMEOUT_SECS; the first that fails is warned
about once, naming the server and the error, and the run is not written again. MLflow is
imported only when a run is started (`pip install estimator_dist[tracking]`).
"""

import json
import os
from typing import Callable, Optional

from estimator_dist import extras
from estimator_dist.task import event_files

REQUEST_TIMEOUT_SECS = 5
EXPERIMENT = "estimator_dist"  # Unless MLFLOW_EXPERIMENT_NAME names another.
_BATCH = 500  # Metrics per request (MLflow takes at most 1000).
PARAMS = os.path.join("estimator_dist", "params.json")  # In the model_dir, by the chief.
_RATE = os.path.join("estimator_dist", "learning_rate.json")  # training.rate_record's.
_TRAINING_SCALARS = {"loss": "train_loss", "global_step/sec": "train_steps_per_sec"}


class Run:
  """One MLflow run, written until its first failed request."""

  def __init__(self, client, run_id, *, uri, warn):
    self._client, self.run_id, self._uri, self._warn = client, run_id, uri, warn

  @classmethod
  def start(cls, uri, *, warn: Callable[[str], None], name=None, tags=None,
            run_id=None, parent_run_id=None) -> Optional["Run"]:
    """The run `run_id`, or a new one (nested in `parent_run_id`); None, warned, when the
    server cannot be reached."""
    # MLflow's defaults retry for minutes; a job waits for no tracking server.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(REQUEST_TIMEOUT_SECS))
    extras.check_installed("mlflow", "--mlflow_tracking_uri")
    import mlflow  # pylint: disable=g-import-not-at-top
    mlflow.set_tracking_uri(uri)  # Artifacts served by the server go by the global one.
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    run = cls(client, run_id, uri=uri, warn=warn)
    if run_id is None:
      run.run_id = run.call(run._create, name, {
          **(tags or {}), **({"mlflow.parentRunId": parent_run_id} if parent_run_id else {})})
    return run if run.run_id else None

  def _create(self, name, tags):
    experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME", EXPERIMENT)
    found = self._client.get_experiment_by_name(experiment)
    experiment_id = (found.experiment_id if found else
                     self._client.create_experiment(experiment))
    return self._client.create_run(experiment_id, run_name=name,
                                   tags={k: str(v) for k, v in tags.items()}).info.run_id

  def call(self, method, *args, **kwargs):
    """method(*args, **kwargs); after a failure (warned once) nothing, and None."""
    if self._client is None:
      return None
    try:
      return method(*args, **kwargs)
    except Exception as e:  # pylint: disable=broad-except
      self._client = None
      self._warn(f"MLflow tracking at {self._uri} stopped: {type(e).__name__}: "
                 f"{str(e).splitlines()[0] if str(e) else ''}; training goes on untracked")
      return None

  def log_params(self, params):
    from mlflow.entities import Param  # pylint: disable=g-import-not-at-top
    items = [Param(str(k), str(v)[:6000]) for k, v in params.items() if v is not None]
    for i in range(0, len(items), 100):
      self.call(lambda chunk: self._client.log_batch(self.run_id, params=chunk), items[i:i + 100])

  def log_metrics(self, points):
    """points: (key, value, step) each."""
    from mlflow.entities import Metric  # pylint: disable=g-import-not-at-top
    items = [Metric(key, float(value), 0, int(step)) for key, value, step in points]
    for i in range(0, len(items), _BATCH):
      self.call(lambda chunk: self._client.log_batch(self.run_id, metrics=chunk),
                items[i:i + _BATCH])

  def set_tags(self, tags):
    for key, value in tags.items():
      self.call(lambda k, v: self._client.set_tag(self.run_id, k, v), key, str(value)[:5000])

  def log_artifacts(self, local_dir, artifact_path):
    self.call(lambda: self._client.log_artifacts(self.run_id, local_dir, artifact_path))

  def end(self, status):
    """status: FINISHED, FAILED or KILLED."""
    self.call(lambda: self._client.set_terminated(self.run_id, status=status))


def record_job(run, model_dir, *, summary=None, params=None):
  """Logs what the job in `model_dir` was and did into `run` (`params`: the chief's, else
  read from the model_dir); a model_dir on a remote file system gives only `params` and
  `summary`."""
  local = "://" not in model_dir
  if params is None and local:
    params = _read_json(os.path.join(model_dir, PARAMS))
  rate = _read_json(os.path.join(model_dir, _RATE)) if local else {}
  run.log_params({**(params or {}), **{f"lr_{key}": value for key, value in rate.items()}})
  steps = int(summary.get("steps", 0)) if summary else 0
  points = [(f"summary/{key}", float(value), steps)
            for key, value in (summary or {}).items() if _is_number(value)]
  if local:
    points += [(f"eval_{name}", value, step)
               for step, metrics in event_files.eval_metrics(model_dir).items()
               for name, value in metrics.items() if name != "global_step"]
    points += [(_TRAINING_SCALARS[tag], value, step)
               for step, scalars in event_files.scalars(model_dir).items()
               for tag, value in scalars.items() if tag in _TRAINING_SCALARS]
  run.log_metrics(points)
  for name, export in _newest_exports(model_dir) if local else []:
    run.log_artifacts(export, f"export/{name}/{os.path.basename(export)}")


def _read_json(path):
  try:
    with open(path) as f:
      return json.load(f)
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
