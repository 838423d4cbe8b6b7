"""How every program of estimator_dist reads its command line and starts its lines.

A bad command line (an unknown flag, a value a flag refuses, a required flag missing)
exits with code 2, as argparse and horovodrun do, instead of absl's 1, which here means
a failed run (verify's FAIL, a failed sweep).

Each line we write for a user starts with `prefix`: `estimator-dist launch: ` where the
command `estimator-dist launch` writes it (each command its own name: launch, sweep,
slurm, k8s, progress, verify, bench), `estimator-dist: ` where the library writes it
inside a training task, a user's program. An error says so after it
(`estimator-dist launch: error: ...`), as argparse's `prog: error: ...` does.

A command's --help lists its flags and exits 0, as argparse's does.
"""

import sys

from absl import app
from absl import flags

from estimator_dist import errors

PROGRAM = "estimator-dist"


def prefix(command=None):
  """The start of our lines: of `command`'s, or (None) the library's inside a task."""
  return f"{PROGRAM} {command}: " if command else f"{PROGRAM}: "


def line(message, command=None):
  """`message` as one of our lines (a format string stays one: the prefix has no %)."""
  return prefix(command) + message


def error_line(message, command=None):
  """An error as one of our lines: `estimator-dist launch: error: ...`."""
  return line(f"error: {message}", command)


def write(out, message, command=None):
  """Writes `message` to `out` as one of our lines, at once."""
  out.write(line(message, command) + "\n")
  out.flush()


def write_error(message, command=None):
  """Writes the error `message` to stderr as one of our lines."""
  write(sys.stderr, f"error: {message}", command)


def run(main, *, command=None):
  """app.run(main) with a bad command line ending the program with errors.USAGE_EXIT_CODE
  and one error line of `command` (None: a training program's)."""
  return app.run(main, flags_parser=lambda argv: _parse(argv, command))


def _parse(argv, command):
  _list_in_help(flags.FLAGS)  # A program's --help too: the training flags it was given.
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    write_error(f"{e}\nPass --helpshort or --helpfull to see help on flags.", command)
    sys.exit(errors.USAGE_EXIT_CODE)
  except SystemExit:
    # Only absl's help flags (--help, --helpshort, --helpfull, --helpxml) end the parse:
    # they printed the help asked for, and exit 1, which here means a failed run.
    sys.exit(0)


def _list_in_help(flag_values):
  """Makes every flag estimator_dist defined a key flag of the main module, which --help
  lists.

  absl's --help lists the key flags of the module named sys.argv[0] (`estimator-dist
  launch` under the console script); a command's flags are defined by the modules that
  make them (option_flags, jobs.spec, ...), and absl keys each by its defining module.
  Other modules' flags (absl's, TensorFlow's) stay in --helpfull, and so do ours whose help
  starts with "Internal:" (what a command passes to its own tasks).
  """
  for module, defined in flag_values.flags_by_module_dict().items():
    if module.split(".")[0] == __name__.split(".")[0]:  # estimator_dist
      for flag in defined:
        if not (flag.help or "").startswith("Internal:"):
          flag_values.register_key_flag_for_module(sys.argv[0], flag)
