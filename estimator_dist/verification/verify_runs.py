"""The runs of `estimator-dist verify` (`verify`) and their comparison: one task of a run
(`--train_only`), the single-worker and the distributed run, and the largest difference
of each trainable weight between their checkpoints.
"""

import functools
import importlib
import os
import random
import shutil
import sys
import tempfile

import numpy as np
import tensorflow as tf

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import launcher
from estimator_dist.jobs import spec
from estimator_dist.outputs import checkpoints
from estimator_dist.strategies import factory
from estimator_dist.strategies import traits
from estimator_dist.training import entry_point
from estimator_dist.training import rate_record
from estimator_dist.verification import program_capture


def _train(verify_flags, program):
  """One task of a verification run: train the module (or the program's model)
  deterministically."""
  tf.config.experimental.enable_op_determinism()
  # Keras seeds unseeded initializers from Python's random, and a program's Keras model
  # built before its Estimator draws its weights from TensorFlow's global seed (without
  # one, determinism refuses the draw): one seed, one reference.
  seed = _seed(verify_flags.training)
  random.seed(seed)
  np.random.seed(seed)
  tf.random.set_seed(seed)
  _seed_run_configs(seed)
  options = verify_flags.training.options()
  # A collective strategy must exist before a Keras model or canned Estimator is built.
  adapter = factory.create_strategy(options.strategy, **options.strategy_options)
  if program:
    join = verify_flags.join_batches.value  # Read before the program defines its flags.
    model, input_fn = program_capture.captured(program, our_flags=verify_flags.names)
    input_fn, params = program_capture.joined_batches(input_fn, join), None
  else:
    module = importlib.import_module(verify_flags.module.value)
    model, input_fn = _model(module), module.input_fn
    params = {**getattr(module, "VERIFY_PARAMS", {}), "batch_size": options.batch_size}
  entry_point.train_and_evaluate(model, input_fn, None, params=params, options=options,
                                 strategy=adapter)


def _seed(training):
  """The one seed of both runs: --random_seed, else 0 (as a job's default)."""
  seed = training.value("random_seed")
  return 0 if seed is None else seed


def _seed_run_configs(seed):
  """Gives every RunConfig the program builds without a seed this one: model_to_estimator
  draws the first checkpoint of a Keras model in a graph of its own, seeded from it (or
  refused by determinism, without one)."""
  original = tf.estimator.RunConfig.__init__

  @functools.wraps(original)
  def seeded(self, *args, **kwargs):
    if len(args) < 2:  # tf_random_seed is its second parameter.
      kwargs.setdefault("tf_random_seed", seed)
    original(self, *args, **kwargs)
  tf.estimator.RunConfig.__init__ = seeded


def _model(module):
  """The module's model_fn, or its Estimator (built here when it is a function)."""
  if hasattr(module, "model_fn"):
    return module.model_fn
  if not hasattr(module, "estimator"):
    raise errors.ConfigError(f"--module={module.__name__} defines neither model_fn nor "
                             f"estimator; define one of them.")
  model = module.estimator
  return model if isinstance(model, tf.compat.v1.estimator.Estimator) else model()


def _run(verify_flags, name, strategy, num_workers, batch_size, learning_rate, lr_scaling,
         model_dir, extra=(), program=()):
  training = verify_flags.training
  module = [] if program else [f"--module={verify_flags.module.value}"]
  # Each process on every CPU, its thread pools the one worker's: ranks pinned to a share
  # would split their sums into other pieces, which changes rounding, not the math.
  command = [sys.executable, "-m", "estimator_dist.verification.verify", "--train_only", *extra,
             *module, "--cpu_affinity=none", f"--model_dir={model_dir}",
             f"--train_steps={training.value('train_steps')}", f"--batch_size={batch_size}",
             f"--learning_rate={learning_rate}", f"--lr_scaling={lr_scaling}",
             # A program's own RunConfig seed counts unless --random_seed was given.
             *([f"--random_seed={training.value('random_seed')}"]
               if training.value("random_seed") is not None else []),
             *(["--", *program] if program else [])]
  log = os.path.join(os.path.dirname(model_dir), f"{name}.log")
  with open(log, "w") as out:
    job = spec.JobSpec(strategy=strategy, num_workers=num_workers, command=command)
    code = launcher.launch(job, options=launch_options.LaunchOptions(model_dir=model_dir),
                           out=out)
  with open(log) as f:
    output = f.read()
  if code:
    sys.stderr.write(output[-4000:])
    raise SystemExit(command_line.error_line(f"the {name} run failed with code {code}; its "
                                             f"log is {log}", "verify"))
  # The chief's record of the rate the decorator scaled; a model whose optimizer keeps its
  # own rate (a canned or Keras Estimator, unscaled) leaves none.
  record = rate_record.read(model_dir)
  return f"{record.scaled:g}" if record and record.scaled is not None else "the model's own"


def start_from(source_dir, model_dir):
  """Puts source_dir's step-0 checkpoint in model_dir, so both runs start alike."""
  os.makedirs(model_dir)
  for name in os.listdir(source_dir):
    if name.startswith("model.ckpt-0."):
      shutil.copy(os.path.join(source_dir, name), model_dir)
  with open(os.path.join(model_dir, "checkpoint"), "w") as f:
    f.write('model_checkpoint_path: "model.ckpt-0"\n')


def trainable_variables(model_dir):
  """Names of the trainable variables of model_dir's latest checkpoint's graph, as they are
  saved (a partitioned variable's parts under the whole variable's name)."""
  with tf.Graph().as_default() as graph:
    tf.compat.v1.train.import_meta_graph(tf.train.latest_checkpoint(model_dir) + ".meta",
                                         clear_devices=True)
    return sorted(checkpoints.saved_shapes(graph.get_collection("trainable_variables")))


def compare(reference_dir, candidate_dir):
  """[(weight, max |diff|, max |reference|, relative)] for the reference's trainable weights.

  A weight missing from the candidate has relative difference inf.
  """
  ref = tf.train.load_checkpoint(reference_dir)
  got = tf.train.load_checkpoint(candidate_dir)
  ref_keys, got_keys = checkpoints.keys_by_name(ref), checkpoints.keys_by_name(got)
  rows = []
  for name in trainable_variables(reference_dir):
    if name not in got_keys:
      rows.append((name, np.inf, np.nan, np.inf))
      continue
    a, b = got.get_tensor(got_keys[name]), ref.get_tensor(ref_keys[name])
    diff, scale = float(np.max(np.abs(a - b))), float(np.max(np.abs(b)))
    rows.append((name, diff, scale, diff / scale if scale else (0.0 if diff == 0 else np.inf)))
  return rows


def main(argv, verify_flags):
  """`estimator-dist verify` with its parsed flags (`verify.VerifyFlags`): one task of a
  run (--train_only), or both runs and their comparison; the exit code."""
  program = argv[1:]  # A program's command after --, or the module flag.
  if bool(program) == bool(verify_flags.module.value):
    raise errors.ConfigError("give --module=MODULE or a program after -- (`estimator-dist "
                             "verify --strategy=horovod -- python train.py`), one of them.")
  if verify_flags.train_only.value:
    return _train(verify_flags, program)
  # oneDNN picks kernels by batch size, which changes rounding between batch splits.
  os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
  training = verify_flags.training
  strategy, strategy_options = training.strategy_and_options()
  n, batch = verify_flags.num_workers.value, training.value("batch_size")
  global_batch = strategy_options.get("global_batch_size")  # Only a strategy's with it.
  replicas = n if traits.of(strategy).synchronous else 1
  # With --global_batch_size, each worker accumulates micro-batches of --batch_size.
  reference_batch = global_batch or batch * replicas
  extra = [f"--global_batch_size={global_batch}"] if global_batch else []
  if program and global_batch:
    raise errors.ConfigError("verify of a program joins the program's batches for the one "
                             "worker: drop --global_batch_size.")
  # A program batches its own input: the one worker takes its batches `replicas` at a time.
  single_extra = [f"--join_batches={replicas}"] if program else []
  batches = ((f"{replicas} x its", "its own") if program else
             (str(reference_batch), str(batch)))
  work = verify_flags.work_dir.value or tempfile.mkdtemp(prefix="estimator_dist_verify_")
  os.makedirs(work, exist_ok=True)
  single_dir, dist_dir = os.path.join(work, "single"), os.path.join(work, "distributed")
  learning_rate, tolerance = training.value("learning_rate"), verify_flags.tolerance.value
  reference_rate = verify_flags.reference_learning_rate.value or learning_rate
  single_rate = _run(verify_flags, "single", "local", 1, reference_batch, reference_rate,
                     "none", single_dir, single_extra, program)
  start_from(single_dir, dist_dir)
  dist_rate = _run(verify_flags, "distributed", strategy, n, batch, learning_rate,
                   training.value("lr_scaling") or "none", dist_dir, extra, program)
  rows = compare(single_dir, dist_dir)
  worst = max((r[3] for r in rows), default=np.inf)
  passed = worst <= tolerance
  what = " ".join(program) if program else verify_flags.module.value
  print(command_line.line(f"{what}, {training.value('train_steps')} steps at global batch "
                          f"{batches[0]}, {strategy} on {n} worker(s) against one worker",
                          "verify"))
  print(f"  {'run':22s} {'workers':>7s} {'batch/worker':>12s} {'learning rate':>14s}")
  print(f"  {'single worker':22s} {1:7d} {batches[0]:>12s} {single_rate:>14s}")
  print(f"  {strategy:22s} {n:7d} {batches[1]:>12s} {dist_rate:>14s}")
  print(f"  {'weight':40s} {'max |diff|':>11s} {'max |ref|':>11s} {'relative':>11s}")
  for name, diff, scale, rel in rows:
    print(f"  {name:40s} {diff:11.3g} {scale:11.3g} {rel:11.3g}")
  print(command_line.line(f"max relative difference {worst:.3g} {'<=' if passed else '>'} "
                          f"tolerance {tolerance:g}: {'PASS' if passed else 'FAIL'}",
                          "verify"), flush=True)
  if passed and not verify_flags.work_dir.value:  # Our temporary directory; a FAIL keeps it.
    shutil.rmtree(work, ignore_errors=True)
  elif not passed:
    print(command_line.line(f"the two runs and their logs are in {work}", "verify"), flush=True)
  return 0 if passed else 1
