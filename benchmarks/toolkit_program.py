"""A model_zoo model trained by estimator_dist, timed step by step (run by the benchmark).

  python -m benchmarks.toolkit_program --model=mnist_cnn --strategy=horovod \\
      --model_dir=/tmp/m --timing_dir=/tmp/t --batch_size=64 --train_steps=200
"""

from absl import flags

import estimator_dist as ed
from benchmarks import models
from benchmarks import task
from benchmarks import timing
from model_zoo import data

flags.DEFINE_enum("model", "mnist_cnn", tuple(models.MODELS), "Model to train.")
flags.DEFINE_enum("data", "synthetic", models.DATA, "Training data.")
flags.DEFINE_string("timing_dir", None, "Where each training task writes its step times.")


def main(_):
  f = flags.FLAGS
  options = ed.options_from_flags()
  adapter = ed.create_strategy(options.strategy, **options.strategy_options)
  (x, y), _ = models.load(f.model, f.data)
  local_replicas = adapter.num_replicas if adapter.name == "mirrored" else 1
  hook = timing.TimingHook(timing.task_path(f.timing_dir, task.name()),
                           options.batch_size * local_replicas)
  ed.train_and_evaluate(models.MODELS[f.model].module.model_fn,
                        data.input_fn(x, y, shuffle=True), strategy=adapter,
                        params={"batch_size": options.batch_size}, hooks=[hook],
                        options=options)


if __name__ == "__main__":
  ed.define_flags(batch_size=64, learning_rate=0.01, train_steps=200)
  ed.run_program(main)
