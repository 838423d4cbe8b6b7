"""The `estimator-dist` command: `estimator-dist launch ...` and friends.

`estimator-dist COMMAND --help` (or `-h`) lists the command's flags; an unknown command is
named, with the commands; `estimator-dist --version`
prints the installed version. Only verify and bench run TensorFlow here: where it is not
installed (a login node), slurm and k8s print their script and manifest, every command's
--help lists its flags (sweep's with Optuna installed), and verify
and bench, asked to run, say in one line what to install.
"""

import difflib
import os
import sys

from estimator_dist import command_line
from estimator_dist import extras
from estimator_dist import version

_COMMANDS = {
    "launch": ("estimator_dist.launch", "Start a local multi-process job."),
    "k8s": ("estimator_dist.engines.kubernetes", "Print the Kubeflow job manifest of a job."),
    "slurm": ("estimator_dist.engines.slurm", "Print the sbatch script of a job."),
    "progress": ("estimator_dist.watching.progress_watch",
                 "Say how far a job is from its heartbeats (the sbatch script runs it)."),
    "verify": ("estimator_dist.verification.verify",
               "Check that a strategy does the math of one worker."),
    "sweep": ("estimator_dist.sweep_cli",
              "Search hyperparameters: many trials, each a job, one Optuna study."),
    "bench": ("estimator_dist.bench.program_bench",
              "Which strategy and worker count train your program fastest here: "
              "bench -- python train.py."),
}
# The commands that run TensorFlow here; the others start jobs and need none installed.
# Their --help needs none either.
_NEED_TENSORFLOW = ("verify", "bench")
# absl's flags that print a program's flags and exit: --help (-?), --helpshort, ...
_HELP_FLAGS = ("help", "?", "helpshort", "helpfull", "helpxml")
# `bench` without a program runs model_zoo's benchmark of a checkout of the repository:
# benchmarks/ and model_zoo/ are not installed with the package.
_BENCH_SCRIPT = os.path.join("benchmarks", "compare_strategies.py")


def _usage():
  lines = ["usage: estimator-dist COMMAND [flags] [-- program args]",
           "       estimator-dist COMMAND -h|--help", "       estimator-dist --version", "",
           "commands:"]
  lines += [f"  {name:10s} {text}" for name, (_, text) in _COMMANDS.items()]
  return "\n".join(lines) + "\n"


def main(argv=None):
  argv = list(sys.argv if argv is None else argv)
  if len(argv) == 2 and argv[1] == "--version":
    print(f"{command_line.PROGRAM} {version.__version__}")
    return 0
  if len(argv) < 2 or argv[1] not in _COMMANDS:
    asked = len(argv) > 1 and argv[1] in ("-h", "--help")
    if len(argv) > 1 and not asked:
      close = difflib.get_close_matches(argv[1], _COMMANDS, n=1)
      command_line.write_error(
          f"unknown command {argv[1]!r}" + (f"; did you mean {close[0]!r}?" if close else "")
          + f" The commands: {', '.join(_COMMANDS)}.")
    (sys.stdout if asked else sys.stderr).write(_usage())
    return 0 if asked else 2
  argv = argv[:2] + _with_long_help(argv[2:])
  if argv[1] == "bench" and "--" not in argv[2:] and not _asks_help(argv[2:]):
    return _bench(argv[2:])
  if _missing_tensorflow(argv[1], argv[2:]):
    return 2
  try:
    module = __import__(_COMMANDS[argv[1]][0], fromlist=["run"])
  except ModuleNotFoundError as e:
    missing = extras.missing_extra(e, "this command")
    if missing is None:
      raise
    command_line.write_error(str(missing), argv[1])
    return 2
  sys.argv = [f"{command_line.PROGRAM} {argv[1]}"] + argv[2:]
  return module.run()


def _with_long_help(args):
  """`args` with -h, which absl does not know, as --help (before any `--`, after which
  come a program's own arguments)."""
  own = args.index("--") if "--" in args else len(args)
  return ["--help" if a == "-h" else a for a in args[:own]] + args[own:]


def _missing_tensorflow(command, args):
  """Whether `command` run with `args` needs TensorFlow 2.15 and it is not installed (then
  says so). Its --help lists its flags without TensorFlow."""
  if command not in _NEED_TENSORFLOW or _asks_help(args):
    return False
  try:
    extras.check_tensorflow(purpose="this command")
  except extras.MissingExtra as e:
    command_line.write_error(str(e), command)
    return True
  return False


def _asks_help(args):
  """Whether `args` ask for the command's flags (a help flag before any `--`, after which
  come a program's own arguments)."""
  own = args[:args.index("--")] if "--" in args else args
  return any(a.startswith("-") and a.lstrip("-").split("=")[0] in _HELP_FLAGS for a in own)


def _bench(args):
  """Runs the checkout's benchmark of model_zoo (`bench` without a program) with `args`,
  in place of this process."""
  roots = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.getcwd()]
  script = next((os.path.join(root, _BENCH_SCRIPT) for root in roots
                 if os.path.isfile(os.path.join(root, _BENCH_SCRIPT))
                 and os.path.isfile(os.path.join(root, "pyproject.toml"))), None)
  if script is None:
    command_line.write_error(
        f"bench without a program runs model_zoo's benchmark of a checkout of the "
        f"repository ({_BENCH_SCRIPT} is not installed with the package): name your "
        f"program after -- ({command_line.PROGRAM} bench -- python train.py), or run "
        f"bench in the checkout's root directory", "bench")
    return 2
  if _missing_tensorflow("bench", args):
    return 2
  sys.stdout.flush()
  os.execv(sys.executable, [sys.executable, script, *args])  # Does not return.


if __name__ == "__main__":
  sys.exit(main())
