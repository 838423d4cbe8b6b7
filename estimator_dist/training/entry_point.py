"""`train_and_evaluate`: one call that trains under any strategy and evaluates on the chief,
as a short wrapper of `TrainingRun`."""

from estimator_dist.strategies import base
from estimator_dist.training import options as options_lib
from estimator_dist.training import run as run_lib


def train_and_evaluate(model, train_input_fn, eval_input_fn=None, *, params=None, hooks=(),
                               serving_input_receiver_fn=None, options=None, **fields):
  """Trains under a strategy and returns the final eval metrics on the chief.

  Like `tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)`, the model
  and the input functions come first.

  Args:
    model: a model_fn (decorated with `distributed` or not) or an Estimator whose
      model_fn and params are used.
    train_input_fn: the single-machine input_fn, batched by the per-worker batch size.
    eval_input_fn: the evaluation input_fn; evaluation runs on the chief (or the
      evaluator task) over all of it, each example once.
    params: passed to the model_fn (over an Estimator's own).
    hooks: extra training hooks; `tf.estimator.experimental.stop_if_*` hooks among them
      stop every task together (see `early_stopping`).
    serving_input_receiver_fn: what the exported SavedModel takes as input, for the
      exporters named in options.exporters.
    options: a `TrainOptions`; `fields` are its fields given as keywords (strategy,
      model_dir, train_steps, ...), over `options` when both are given. `strategy` is a
      name, or an adapter (`create_strategy`, or one made by hand, started here).

  Returns:
    The final evaluation metrics on the chief; None on other tasks or without
    eval_input_fn.
  """
  adapter = fields.get("strategy")
  if isinstance(adapter, base.StrategyAdapter):
    fields["strategy"] = adapter.name
  else:
    adapter = None
  options = (options.replace(**fields) if options is not None else
             options_lib.TrainOptions(**fields))
  run = run_lib.TrainingRun(model=model, train_input_fn=train_input_fn,
                            eval_input_fn=eval_input_fn, params=params, hooks=hooks,
                            options=options, adapter=adapter,
                            serving_input_receiver_fn=serving_input_receiver_fn)
  run.start()
  return run.run()
