"""Loads a SavedModel as TF Serving would, in a process of its own, and writes what its
serving signature gives for the inputs in an .npy file.

  python -m tests.programs.load_export EXPORT_DIR INPUT_NAME INPUTS.npy OUTPUT_NAME OUT.npy
"""

import sys

import numpy as np
import tensorflow as tf


def main(export_dir, input_name, inputs_path, output_name, out_path):
  serve = tf.saved_model.load(export_dir).signatures["serving_default"]
  outputs = serve(**{input_name: tf.constant(np.load(inputs_path))})
  np.save(out_path, outputs[output_name].numpy())


if __name__ == "__main__":
  main(*sys.argv[1:])
