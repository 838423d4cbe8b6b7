"""How every program of estimator_dist reads its command line: absl's app.run, except that
a bad command line (an unknown flag, a value a flag refuses, a required flag missing)
exits with code 2, as argparse and horovodrun do, instead of absl's 1, which here means
a failed run (verify's FAIL, a failed sweep)."""

import sys

from absl import app
from absl import flags

from estimator_dist import errors


def run(main):
  """app.run(main) with a bad command line ending the program with errors.USAGE_EXIT_CODE."""
  return app.run(main, flags_parser=_parse)


def _parse(argv):
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    sys.stderr.write(f"FATAL Flags parsing error: {e}\n"
                     "Pass --helpshort or --helpfull to see help on flags.\n")
    sys.exit(errors.USAGE_EXIT_CODE)
