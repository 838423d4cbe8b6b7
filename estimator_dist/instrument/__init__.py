"""Programs that never import estimator_dist, trained through it as written.

The launcher (--instrument=auto) puts `site/` on its tasks' PYTHONPATH, as
`opentelemetry-instrument` and `ddtrace-run` do: Python runs its `sitecustomize` at start,
which chains to any other and waits for TensorFlow's import (`on_import`). A program whose
main file names estimator_dist is ours already and is left alone. Any other gets the job's
strategy started as soon as TensorFlow is imported, before it builds an Estimator or a
Keras model, and its Estimator calls routed through the toolkit (`patches`): each
`train()` is one distributed round on every task, `evaluate()` runs once on the chief
and every task gets its metrics, `export_saved_model()` writes once on the chief and every
task gets its path (`rounds`), `predict()` runs where it is called, and
`tf.estimator.train_and_evaluate` is `ed.train_and_evaluate`. `launching` is the
launcher's side: the tasks' PYTHONPATH, and whether a command's program is instrumented;
`in_container` does the same in a Kubernetes pod, where no launcher of ours starts it.
"""
