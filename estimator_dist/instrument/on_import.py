"""When TensorFlow is imported in the program the launcher instruments (env_vars.INSTRUMENT
names its main file; one that imports estimator_dist is ours already, and is not): the
job's strategy starts and the program's Estimator calls are routed through the toolkit."""

import importlib.util
import os
import sys
import time

from absl import logging

from estimator_dist import command_line
from estimator_dist.contract import env_vars



_CLOSE_SECS = 1.0


def install(env=os.environ):
  """Instruments this process once TensorFlow is imported, if it runs the program the
  launcher instruments."""
  if not (env.get(env_vars.INSTRUMENT) and env.get(env_vars.STRATEGY)):
    return
  if "tensorflow" in sys.modules:
    _on_tensorflow()
  else:
    sys.meta_path.insert(0, _AfterImport("tensorflow", _on_tensorflow))


def runs_the_program(path):
  """Whether this process runs the program whose main file is `path`. Known from its main
  module once that runs; before it, while Python runs the site's own start-up (a
  sitecustomize or a .pth file that imports TensorFlow), from the command it was given."""
  main = getattr(sys.modules.get("__main__"), "__file__", None)
  argv = getattr(sys, "orig_argv", [])
  if main:
    return os.path.realpath(main) == os.path.realpath(path)
  if len(argv) > 1 and argv[1].endswith(".py"):
    return os.path.realpath(argv[1]) == os.path.realpath(path)
  if len(argv) > 2 and argv[1] == "-m":
    stem, module = os.path.splitext(os.path.realpath(path))[0], argv[2].replace(".", os.sep)
    return stem.endswith((os.sep + module, os.sep + os.path.join(module, "__main__")))
  return False


def _on_tensorflow():
  main = os.environ[env_vars.INSTRUMENT]
  if not runs_the_program(main):
    return  # Another program of the task (horovodrun, a helper it starts).
  # pylint: disable=g-import-not-at-top
  from estimator_dist.instrument import patches
  from estimator_dist.strategies import factory
  from estimator_dist.strategies import traits
  from estimator_dist.training import flags as flags_lib
  from estimator_dist.training import program
  strategy = flags_lib.job_strategy()
  # Before the program runs anything of TensorFlow: a collective strategy and mirrored's
  # devices can start only then. Horovod needs nothing that early, and a program that
  # imports horovod.tensorflow is still importing it now: its first Estimator call starts
  # it (patches).
  if not traits.of(strategy).ranks_from_horovodrun:
    try:
      adapter = factory.create_strategy(strategy)
    except Exception as e:  # pylint: disable=broad-except
      program.exit_if_ours(e)
      raise
    if adapter.task.role == "ps":
      _serve(adapter, os.path.basename(main))
  patches.install(strategy=strategy)
  # Our lines (the learning rate it scales, the evaluations) in a program that set up no
  # logging of its own, as under absl's app.run.
  logging.use_absl_handler()
  logging.set_verbosity(logging.INFO)
  command_line.write(sys.stderr, f"instrumented {os.path.basename(main)}: its Estimators "
                     f"train, evaluate and export under the job's {strategy} strategy")


def _serve(adapter, main):
  """A ps task serves the job's variables until training ends and exits: it runs nothing
  of the program, whose own calls (its own strategy built for a ps task, its data) are
  for the training tasks."""
  command_line.write(sys.stderr, f"instrumented {main}: ps:{adapter.task.index} serves the "
                     f"job's variables and runs nothing of the program")
  adapter.train(None, None, None)
  if getattr(sys.modules.get("__main__"), "__file__", None):
    sys.exit(0)
  # Still in the site's start-up (its sitecustomize imported TensorFlow), where an exit is
  # a failure to start Python: this process ends here, its work done, once the sessions by
  # which the training tasks told it so have closed (an exit at once resets them, and
  # TensorFlow retries their CloseSession for ever; Python's own exit takes as long).
  time.sleep(_CLOSE_SECS)
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(0)  # pylint: disable=protected-access


class _AfterImport:
  """A meta path finder that runs `then()` once module `name` has been executed."""

  def __init__(self, name, then):
    self._name, self._then, self._finding = name, then, False

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname != self._name or self._finding:
      return None
    self._finding = True
    try:
      spec = importlib.util.find_spec(fullname)
    finally:
      self._finding = False
    if spec is None or spec.loader is None:
      return spec
    sys.meta_path.remove(self)
    execute, then = spec.loader.exec_module, self._then

    def exec_module(module):
      execute(module)
      then()
    spec.loader.exec_module = exec_module  # This module's loader only.
    return spec
