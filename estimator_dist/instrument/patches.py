"""The routes of an instrumented program's Estimator calls.

- `tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)` is
  `ed.train_and_evaluate` with the same arguments;
- `Estimator.train(input_fn, hooks, steps, max_steps, saving_listeners)` is one
  distributed round on every task, to the same step (the chief's round decides it);
- `Estimator.evaluate(...)` runs once, on the chief, which also writes the job's summary,
  and every task returns its metrics;
- `Estimator.export_saved_model(...)` writes once, on the chief, and every task returns
  its path; `predict()` runs where it is called, in a session of its process alone.

A call made by the toolkit itself (a `TrainingRun` running) goes to TensorFlow unchanged,
and so does every call once an error of ours ended the program.
"""

import functools
import os
import sys

from tensorflow.python.distribute import collective_all_reduce_strategy  # pylint: disable=g-direct-tensorflow-import
from tensorflow_estimator.python.estimator import estimator as estimator_lib
from tensorflow_estimator.python.estimator import training as training_lib

from estimator_dist import bound_names
from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.contract import rounds
from estimator_dist.outputs import checkpoints
from estimator_dist.strategies import factory
from estimator_dist.strategies import traits
from estimator_dist.training import chief_results
from estimator_dist.training import entry_point
from estimator_dist.training import evaluate_alone
from estimator_dist.training import final_summary
from estimator_dist.training import one_pass
from estimator_dist.training import options as options_lib
from estimator_dist.training import program
from estimator_dist.training import run as run_lib
from estimator_dist.training import run_config_merge
from estimator_dist.training import run_state

_ESTIMATOR = estimator_lib.Estimator  # Every Estimator's base: canned, Keras, custom.
_original = {}
_strategy = None
_said = []  # That a trial's model_dir goes over the program's own, said once.


def install(*, strategy):
  """Routes the calls under `strategy` (once)."""
  global _strategy
  if _original:
    return
  _strategy = strategy
  _original["train_and_evaluate"] = training_lib.train_and_evaluate
  for name in ("train", "evaluate", "export_saved_model"):
    _original[name] = getattr(_ESTIMATOR, name)
  # Also in the API modules that bound it already: starting a strategy loads them.
  bound_names.rebind("train_and_evaluate", _original["train_and_evaluate"],
                     _routed(_train_and_evaluate, "train_and_evaluate"))
  _ESTIMATOR.train = _routed(_train, "train")
  _ESTIMATOR.evaluate = _routed(_evaluate, "evaluate")
  if traits.of(strategy).needs_ps:  # Its server started without collectives.
    for cls in (collective_all_reduce_strategy.CollectiveAllReduceStrategy,
                collective_all_reduce_strategy.CollectiveAllReduceStrategyV1):
      cls.__init__ = _refused_collective
  _ESTIMATOR.export_saved_model = _routed(_export_saved_model, "export_saved_model")


def _refused_collective(self, *args, **kwargs):
  """A MultiWorkerMirroredStrategy the program builds itself cannot run in a task of a
  parameter_server job: its collective ops are set up as the process starts, and the
  job's server started without them (TensorFlow's `Collective ops must be configured at
  program startup`). One line where the program builds it, and the job's exit code 2."""
  del self, args, kwargs
  program.exit_if_ours(errors.ConfigError(
      f"the program builds its own MultiWorkerMirroredStrategy, which cannot run in a task "
      f"of the job's {_strategy} strategy: run the job with --strategy=multi_worker, or "
      f"let the job's strategy distribute the program's Estimator (drop its own "
      f"strategy)."))


def _routed(route, name):
  original = _original[name]

  @functools.wraps(original)
  def call(*args, **kwargs):
    if run_state.running():
      return original(*args, **kwargs)
    try:
      return route(*args, **kwargs)
    except Exception as e:  # pylint: disable=broad-except
      program.exit_if_ours(e)
      raise
  return call


def _adapter():
  """This process's started adapter (Horovod's starts at the program's first call)."""
  return factory.started() or factory.create_strategy(_strategy)


def _task():
  return _adapter().task


def _model_dir(estimator):
  """The chief's model_dir for the job: the Estimator's own, else the job's; a sweep's
  trial's, over the Estimator's own (a program's --model_dir default would put every
  trial in one directory)."""
  own = run_config_merge.own_model_dir(estimator.config)
  trial = os.environ.get(env_vars.TRIAL) and os.environ.get(env_vars.MODEL_DIR)
  if trial and own and os.path.normpath(own) != os.path.normpath(trial) and not _said:
    _said.append(own)
    command_line.write(sys.stderr, f"the sweep's trial trains in its own model_dir, {trial}, "
                       f"not in the program's {own}")
  job = trial or own or os.environ.get(env_vars.MODEL_DIR)
  if not job:
    raise errors.ConfigError("the Estimator has no model_dir (RunConfig(model_dir=...)) and "
                             "the job names none: give the job one (`estimator-dist slurm "
                             "--model_dir=DIR`; `estimator-dist launch` makes one).")
  _take(estimator, job)
  return job


def _take(estimator, model_dir):
  """Makes `model_dir`, the job's, the Estimator's for its later calls (predict) too: a
  task without one of its own (Horovod's example gives it to rank 0 alone) gets the
  chief's. Those calls run in a session of this process alone: TF_CONFIG gives the
  Estimator its task's server as master, and a predict() in a session there waited for
  ever in its restore at times (TensorFlow's premade tutorial under SLURM: 2 runs of 4
  on a loaded machine), where nothing of the cluster is needed."""
  # pylint: disable=protected-access
  config = estimator.config.replace(model_dir=model_dir)
  config._master = config._evaluation_master = ""
  estimator._model_dir, estimator._config = model_dir, config


def _agree(kind, estimator, decide=lambda model_dir: {}):
  """The chief's model_dir for the job and what `decide(model_dir)` adds, on every task
  (round `kind`); every Estimator takes that model_dir."""
  number = rounds.next_round(kind, _task())
  if _task().is_chief:
    model_dir = _model_dir(estimator)
    agreed = {**decide(model_dir), "model_dir": model_dir}
    rounds.publish(kind, number, agreed)
    return agreed
  agreed = rounds.wait_for(kind, number)
  _take(estimator, agreed["model_dir"])
  return agreed


def _check_horovod_of_its_own():
  """A program that starts Horovod itself needs a job of Horovod ranks: under another
  strategy its hvd.size() is 1 on every task, and what it derives from it is wrong."""
  hvd = sys.modules.get("horovod.tensorflow")
  if (_strategy != "horovod" and hvd is not None and hasattr(hvd, "is_initialized") and
      hvd.is_initialized()):
    raise errors.ConfigError(
        f"the program starts Horovod itself (hvd.init()), which under --strategy={_strategy} "
        f"gives every task hvd.size() 1 and rank 0: run it with --strategy=horovod.")


def _train_and_evaluate(estimator, train_spec, eval_spec):
  _check_horovod_of_its_own()
  _agree("train_and_evaluate", estimator)
  return entry_point.train_and_evaluate(estimator, train_spec, eval_spec,
                                        strategy=_strategy)


def _train(estimator, input_fn, hooks=None, steps=None, max_steps=None,
           saving_listeners=None):
  if steps is not None and max_steps is not None:
    raise ValueError("Can not provide both steps and max_steps.")  # As TensorFlow says.
  _check_horovod_of_its_own()
  if _task().role == "evaluator":  # It evaluates (evaluate()), it does not train.
    return estimator

  def to_step(model_dir):
    """The step this round trains to: max_steps, or steps (else one pass over the input,
    as TensorFlow trains until it ends) from where the job stands."""
    if max_steps is not None:
      return max_steps
    more = steps if steps is not None else one_pass.steps(
        input_fn, _adapter(), params=estimator.params, config=estimator.config,
        why=one_pass.TRAIN_CALL)
    return max(checkpoints.latest_step(model_dir), 0) + more
  # Where the job trains, and to which step from where it stands.
  agreed = _agree("train", estimator, lambda model_dir: {"steps": to_step(model_dir)})
  model_dir, target = agreed["model_dir"], agreed["steps"]
  options = options_lib.TrainOptions(strategy=_strategy, model_dir=model_dir,
                                     train_steps=max(int(target), 1))
  run = run_lib.TrainingRun(model=estimator, train_input_fn=input_fn, options=options,
                            hooks=tuple(hooks or ()),
                            saving_listeners=tuple(saving_listeners or ()))
  run.start()
  run.run()
  return estimator


def _alone(estimator):
  """An Estimator of the chief alone over the job's model_dir, with `estimator`'s model."""
  return evaluate_alone.evaluating_estimator(
      estimator._model_fn, model_dir=_model_dir(estimator),  # pylint: disable=protected-access
      params=estimator.params)


def _evaluate(estimator, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
  def on_chief():
    with run_state.entered():
      metrics = _original["evaluate"](
          _alone(estimator), evaluate_alone.evaluated_input_fn(input_fn), steps=steps,
          hooks=hooks, checkpoint_path=checkpoint_path, name=name)
    final_summary.print_summary(_adapter(), int(metrics.get("global_step", 0)), None, None,
                                metrics)
    return metrics
  return chief_results.shared("evaluate", task=_task(), on_chief=on_chief,
                              encode=chief_results.encode_metrics,
                              decode=chief_results.decode_metrics)


def _export_saved_model(estimator, export_dir_base, serving_input_receiver_fn, **kwargs):
  def on_chief():
    with run_state.entered():
      return _original["export_saved_model"](_alone(estimator), export_dir_base,
                                             serving_input_receiver_fn, **kwargs)
  path, = chief_results.shared("export", task=_task(),
                               on_chief=lambda: [on_chief()],
                               encode=chief_results.encode_exports,
                               decode=chief_results.decode_exports)
  return path
