"""`train_and_evaluate`: one call that trains under any strategy and evaluates on the chief,
as a short wrapper of `TrainingRun`; TensorFlow's form of it too (`spec_form`)."""

from estimator_dist.contract import rounds
from estimator_dist.strategies import base
from estimator_dist.training import chief_results
from estimator_dist.training import flags as flags_lib
from estimator_dist.training import options as options_lib
from estimator_dist.training import run as run_lib
from estimator_dist.training import spec_form


def train_and_evaluate(model, train_input_fn, eval_input_fn=None, *, params=None, hooks=(),
                       serving_input_receiver_fn=None, options=None, **fields):
  """Trains under a strategy and returns the final eval metrics on the chief.

  Two forms. TensorFlow's, `train_and_evaluate(estimator, train_spec, eval_spec)` with a
  `tf.estimator.TrainSpec` and a `tf.estimator.EvalSpec`, means what TensorFlow means:
  max_steps is train_steps (without it, the steps of one pass over the input), the
  specs' hooks, saving_listeners and exporters are used, EvalSpec.steps and throttle_secs
  are eval_steps and eval_throttle_secs (its name and start_delay_secs are not:
  evaluation follows the checkpoints into model_dir/eval). The model_dir is the
  Estimator's, else the job's (--model_dir, model_dir=).
  The other options come from `options`, else from the training flags when the program
  defined them (`define_flags`), over which `fields` go. Otherwise, as documented below.
  Under either, the Estimator's RunConfig counts where no flag or keyword set an option
  (`run_config_merge`).

  Args:
    model: a model_fn (decorated with `distributed` or not) or an Estimator whose
      model_fn, params and RunConfig are used.
    train_input_fn: the single-machine input_fn, batched by the per-worker batch size
      (or a TrainSpec).
    eval_input_fn: the evaluation input_fn; evaluation runs on the chief (or the
      evaluator task) over all of it, each example once (or an EvalSpec).
    params: passed to the model_fn (over an Estimator's own).
    hooks: extra training hooks; `tf.estimator.experimental.stop_if_*` hooks among them
      stop every task together (see `early_stopping`).
    serving_input_receiver_fn: what the exported SavedModel takes as input, for the
      exporters named in options.exporters.
    options: a `TrainOptions`; `fields` are its fields given as keywords (strategy,
      model_dir, train_steps, ...), over `options` when both are given. `strategy` is a
      name, or an adapter (`create_strategy`, or one made by hand, started here); without
      options or strategy, a job's task trains under its job's strategy (its engine names
      it in the task's environment), anywhere else `local`.

  Returns:
    The final evaluation metrics on the chief; None on other tasks or without
    eval_input_fn. In TensorFlow's form, `(metrics, export_results)`, as TensorFlow
    returns them on one machine: the chief's final metrics and what each exporter
    exported of the final checkpoint, on the chief and on every other training task
    (which waits for them in the job's mailbox; `(None, [])` in a job without one); an
    evaluator task's own final metrics and [] (it exports); `(None, [])` on a ps task.
  """
  if options is None and "strategy" not in fields and flags_lib.job_strategy():
    fields["strategy"] = flags_lib.job_strategy()  # A job's task: the job's strategy.
  adapter = fields.get("strategy")
  if isinstance(adapter, base.StrategyAdapter):
    fields["strategy"] = adapter.name
  else:
    adapter = None
  tf_form = spec_form.is_spec_form(train_input_fn, eval_input_fn)
  if tf_form:
    arguments = spec_form.run_arguments(
        model, train_input_fn, eval_input_fn, options=options, fields=fields, hooks=hooks,
        params=params, serving_input_receiver_fn=serving_input_receiver_fn)
  else:
    arguments = dict(
        model=model, train_input_fn=train_input_fn, eval_input_fn=eval_input_fn,
        params=params, hooks=hooks, serving_input_receiver_fn=serving_input_receiver_fn,
        options=(options.replace(**fields) if options is not None else
                 options_lib.TrainOptions(**fields)))
  run = run_lib.TrainingRun(**arguments, adapter=adapter)
  run.start()
  metrics = run.run()
  if not tf_form:
    return metrics
  task = run.adapter.task
  if task.role == "evaluator":
    return metrics, []
  if not task.is_training or not rounds.available():
    return metrics, (run.evaluations.export_results if task.is_chief else [])
  return chief_results.shared(
      "train_and_evaluate_result", task=task,
      on_chief=lambda: (metrics, run.evaluations.export_results),
      encode=lambda result: {"metrics": chief_results.encode_metrics(result[0] or {}),
                             "exports": chief_results.encode_exports(result[1])},
      decode=lambda value: (chief_results.decode_metrics(value["metrics"]) or None,
                            chief_results.decode_exports(value["exports"])))
