"""Trains plain_model, then exits with a code of its own on the task --exiting names, as a
program that follows sysexits (75 is EX_TEMPFAIL) or numbers its own outcomes does: codes
that the toolkit also uses for its verdicts (75 a taken port, 3 divergence, 200 a
preemption), here the program's, after a training that went well."""

import json
import os
import sys

from absl import flags

import estimator_dist as ed
from tests.programs import plain_model

flags.DEFINE_integer("exit_code", 0, "The code to exit with after training.")
flags.DEFINE_enum("exiting", "chief", ["chief", "worker"], "The task that exits with it "
                  "(the others exit 0): the chief, or worker 0.")
FLAGS = flags.FLAGS


def main(argv):
  plain_model.main(argv)
  task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {"type": "chief"})
  if task["type"] == FLAGS.exiting and task.get("index", 0) == 0:
    print(f"the program exits with its own code {FLAGS.exit_code}", flush=True)
    sys.exit(FLAGS.exit_code)


if __name__ == "__main__":
  ed.define_flags(batch_size=32, learning_rate=0.01, train_steps=20)
  ed.run_program(main)
