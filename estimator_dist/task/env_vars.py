"""The names of the variables engines and tasks agree on, under their old module name.

They live in `estimator_dist.contract.env_vars`; this module stays for the imports that
still name it here (the watchdog's).
"""

from estimator_dist.contract.env_vars import *  # noqa: F403  # pylint: disable=wildcard-import
