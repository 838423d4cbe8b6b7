"""A model_zoo model trained by estimator_dist (run by the strategy benchmark, which reads
its speed from the tasks' heartbeats).

  estimator-dist launch --strategy=horovod --num_workers=2 -- \\
      python -m benchmarks.toolkit_program --model=mnist_cnn --batch_size=64
"""

from absl import flags

import estimator_dist as ed
from benchmarks import models
from model_zoo import data

flags.DEFINE_enum("model", "mnist_cnn", tuple(models.MODELS), "Model to train.")
flags.DEFINE_enum("data", "synthetic", models.DATA, "Training data.")


def main(_):
  f = flags.FLAGS
  options = ed.options_from_flags()
  (x, y), _ = models.load(f.model, f.data)
  ed.train_and_evaluate(models.MODELS[f.model].module.model_fn,
                        data.input_fn(x, y, shuffle=True),
                        params={"batch_size": options.batch_size}, options=options)


if __name__ == "__main__":
  ed.define_flags(batch_size=64, learning_rate=0.01, train_steps=200)
  ed.run_program(main)
