"""The error raised for a configuration that cannot work; its message names the fix."""


class ConfigError(ValueError):
  """Bad input to estimator_dist: a flag, an option, TF_CONFIG, a model_fn or input_fn."""
