"""What the toolkit needs installed, told in one line that names the pip extra to install.

The core needs TensorFlow 2.15 with tensorflow-estimator 2.15 and leaves the choice of
TensorFlow's distribution to the environment: `estimator_dist[cpu]` installs
`tensorflow-cpu`, `estimator_dist[gpu]` `tensorflow[and-cuda]`. Sweeps need
`estimator_dist[sweep]` (Optuna, matplotlib), Spark jobs `[spark]`, Horovod `[horovod]`,
MLflow tracking `[tracking]`.
Nothing here imports TensorFlow: a process that only starts jobs stays light.
"""

import importlib.util

TENSORFLOW = "2.15"
# The distributions that install the `tensorflow` package.
_TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu",
                             "tensorflow-intel", "tensorflow-macos", "tf-nightly")
_EXTRAS = {"sweep": ("optuna", "matplotlib", "optuna_dashboard"), "spark": ("pyspark",),
           "horovod": ("horovod",), "tracking": ("mlflow",)}


class MissingExtra(ImportError):
  """What the toolkit needs is not installed; the message names the extra to install."""


def check_tensorflow(*, purpose="estimator_dist"):
  """MissingExtra, in one line naming the extras and saying that `purpose` needs them,
  unless TensorFlow 2.15 and tensorflow-estimator 2.15 are installed."""
  installed = _version("tensorflow", _TENSORFLOW_DISTRIBUTIONS)
  estimator = _version("tensorflow_estimator", ("tensorflow-estimator",))
  found = [f"{name} {version or 'missing'}" for name, version in
           (("TensorFlow", installed), ("tensorflow-estimator", estimator))
           if not (version or "").startswith(TENSORFLOW)]
  if found:
    raise MissingExtra(
        f"{purpose} needs TensorFlow {TENSORFLOW} and tensorflow-estimator "
        f"{TENSORFLOW} (found {', '.join(found)}): pip install 'estimator_dist[cpu]' "
        f"(tensorflow-cpu) or 'estimator_dist[gpu]' (tensorflow[and-cuda]), or install "
        f"TensorFlow {TENSORFLOW} your own way.")


def missing_extra(error, purpose):
  """The MissingExtra of a ModuleNotFoundError for a module an extra installs (naming the
  extra and `purpose`); None for any other module."""
  top = (error.name or "").split(".")[0]
  extra = next((extra for extra, modules in _EXTRAS.items() if top in modules), None)
  if extra is None:
    return None
  return MissingExtra(f"{purpose} needs {top}, which estimator_dist[{extra}] installs: "
                      f"pip install 'estimator_dist[{extra}]'.")


def _version(package, distributions):
  """The version of the first of `distributions` installed; None when `package` is
  missing; TENSORFLOW when it is installed by none of them (built from source: taken as
  it is)."""
  if importlib.util.find_spec(package) is None:
    return None
  from importlib import metadata  # pylint: disable=g-import-not-at-top (a launcher's 60 ms)
  for name in distributions:
    try:
      return metadata.version(name)
    except metadata.PackageNotFoundError:
      continue
  return TENSORFLOW


def check_installed(module, purpose):
  """MissingExtra, naming the extra and `purpose`, when `module` is not installed."""
  if importlib.util.find_spec(module) is None:
    raise missing_extra(ModuleNotFoundError(name=module), purpose)
