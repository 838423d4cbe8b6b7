"""What runs the training, above the strategies, in the order of a program:

flags (`flags`) -> options (`options.TrainOptions`) -> the adapter (`estimator_dist.
strategies`) -> the decorated model_fn (`decorator`, with the rate it finds and scales:
`learning_rate`, as `rate_options` say, recorded by `rate_record`) -> `run.TrainingRun`,
which builds the Estimator, starts the backend and trains, watched by `hooks`.
`entry_point.train_and_evaluate` is its short wrapper. The flags and the options import
no TensorFlow.
"""
