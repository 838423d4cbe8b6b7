"""The version of estimator_dist: its installed distribution's, which pyproject.toml sets.

pyproject.toml is the one place the version is written; `estimator_dist.__version__` and
`estimator-dist --version` read it from the installed distribution's metadata, as
`importlib.metadata.version("estimator_dist")` does.
"""

import importlib.metadata

DISTRIBUTION = "estimator_dist"
UNKNOWN = "0+unknown"  # A checkout on PYTHONPATH that was never installed.

try:
  __version__ = importlib.metadata.version(DISTRIBUTION)
except importlib.metadata.PackageNotFoundError:
  __version__ = UNKNOWN
