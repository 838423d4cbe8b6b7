"""Population-based training (Jaderberg et al., 2017) of a sweep's program.

  estimator-dist sweep --scheduler=pbt --population=4 --pbt_interval_steps=500 \\
      --space="learning_rate=loguniform(1e-4,1e-1)" --sweep_dir=/tmp/pbt -- \\
      python -m model_zoo.mnist_dnn --train_steps=3000

The population's members train in generations of `pbt_interval_steps` global steps to
the program's --train_steps, each member in its own model_dir (`member_M`), `--parallel`
at once. A generation's segment of a member is one trial of the study: its values, the
steps it trained, its metric at the end. Between two generations, the members are ranked
by their metric: each one in the bottom quantile (and each that diverged) takes a top
member's latest checkpoint into its own model_dir (exploit) and goes on with that member's
values perturbed (explore, `pbt_values`); the others go on with their own. Each segment
is a job of its own, whose launcher reads the member's checkpoint in full before it starts
(`checkpoints`).

A generation is queued once the one before has every result, except the segment of each
member sure to go on with its own values, queued as soon as the results in say so
(`pbt_plan`). Queuing is idempotent (the plan is a function of the study and the seed),
so a sweep killed at any moment and run again continues: a segment that was running
resumes from its member's checkpoint.
One runner queues the generations (under SLURM, array task 0); others run what it queued.
"""

import dataclasses
import functools
import json
import os
import re
import shutil
import time

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import whole_file
from estimator_dist.experiments import fixed_points
from estimator_dist.experiments import pbt_plan
from estimator_dist.experiments import pbt_values
from estimator_dist.experiments import space as space_lib
from estimator_dist.experiments import trial_job
from estimator_dist.jobs import model_dir_arg

MEMBER, GENERATION = pbt_values.MEMBER, pbt_values.GENERATION
_TRAIN_STEPS = "pbt_train_steps"  # The study's: the program's --train_steps.
_STOPPED = "pbt_stopped"  # The study's: why the runner that queues stopped.
_POLL_SECS = 0.5


def with_generations(study, program, options):
  """`options` whose trial count is every segment of the population; records the program's
  --train_steps in the study (ConfigError for a program PBT cannot run in segments)."""
  args = list(program[1:])
  given = model_dir_arg.program_flag(args, "train_steps")
  try:
    total = int(given)
  except (TypeError, ValueError):
    total = None
  if total is None or total <= options.pbt_interval_steps:
    raise errors.ConfigError(
        f"--scheduler=pbt trains each member to the program's --train_steps in generations "
        f"of --pbt_interval_steps={options.pbt_interval_steps}, so it needs a --train_steps "
        f"of the program larger than that (got {given!r}): at least two generations.")
  for flag in ("warmup_steps", "profile_steps", "train_steps"):
    if flag in options.search_space or (
        flag != "train_steps" and model_dir_arg.program_flag(args, flag) is not None):
      raise errors.ConfigError(
          f"each PBT segment runs the program with --train_steps set to its generation's "
          f"last step, which --{flag} cannot follow; drop it from the program and the space.")
  recorded = study.user_attrs.get(_TRAIN_STEPS)
  if recorded is None:
    study.set_user_attr(_TRAIN_STEPS, total)
  elif recorded != total:
    raise errors.ConfigError(
        f"the population in {options.storage_url} trains to --train_steps={recorded}; run "
        f"it again with that, or give a new --sweep_dir for a new sweep.")
  return dataclasses.replace(options, trials=options.population *
                             len(boundaries(total, options.pbt_interval_steps)))


def generations(study, options):
  """How many generations the study's population trains."""
  return len(boundaries(study.user_attrs[_TRAIN_STEPS], options.pbt_interval_steps))


def boundaries(total, interval):
  """The global step each generation trains to."""
  return [min(step, total) for step in range(interval, total + interval, interval)]


def run(study, *, program, options, slots, out, tracked, run_trials):
  """Runs the population's generations in `slots` (`run_trials` runs what is queued)."""
  bounds = boundaries(study.user_attrs[_TRAIN_STEPS], options.pbt_interval_steps)
  trials = dict(program=program, options=options, slots=slots, out=out, tracked=tracked)
  if os.environ.get("SLURM_ARRAY_TASK_ID", "0") != "0":  # Array task 0 queues.
    while _missing(segments(study), len(bounds) - 1, options.population):
      if study.user_attrs.get(_STOPPED):
        raise trial_job.TrialFailed(study.user_attrs[_STOPPED])
      run_trials(study, **trials)
      time.sleep(_POLL_SECS)
    return
  if study.user_attrs.get(_STOPPED):
    study.set_user_attr(_STOPPED, None)  # Run again: the population goes on.
  ready = functools.partial(queue_ready, study, options, bounds, out)
  try:
    for generation in range(len(bounds)):  # Each runs to the end, unless a segment failed.
      queue(study, options, generation, bounds, out)
      run_trials(study, **trials, on_ended=ready)
      missing = _missing(segments(study), generation, options.population)
      if missing:
        raise trial_job.TrialFailed(
            f"member(s) {missing} of the population did not finish generation {generation}: "
            f"the population stops there; run the sweep again to retry them.")
  except trial_job.TrialFailed as e:
    study.set_user_attr(_STOPPED, str(e))  # The other runners stop too.
    raise


def queue(study, options, generation, bounds, out):
  """Queues the generation's segment of each member that has none finished, running or
  waiting. Every exploit's copy is made (once: a marker in the member's model_dir says
  so) before any segment is queued, so no source has trained on meanwhile."""
  found = segments(study)
  wanted = []
  for member, (values, source) in enumerate(_plan(found, options, generation)):
    if not _to_queue(found, member, generation, options):
      continue
    attrs = _attrs(options, member, generation, bounds)
    if source is not None:
      exploited = _copied(found, options, member, source, generation)
      attrs.update(start_step=checkpoint_names.step_of(exploited["checkpoint"]),
                   exploited=exploited)
      command_line.write(out, f"generation {generation}: member {member} takes member "
                              f"{source}'s {exploited['checkpoint']} and goes on with "
                              f"{' '.join(space_lib.as_flags(values))}", command="sweep")
    wanted.append((values, attrs))
  for values, attrs in wanted:
    study.enqueue_trial(values, user_attrs=attrs)


def queue_ready(study, options, bounds, out):
  """After a segment ends: queues the first generation that misses results (`queue`: its
  generation before has them all), and, while some are missing, the next segment of each
  member sure to go on with its own values (`pbt_plan.sure_to_keep`), so that a free slot
  need not wait for the generation's last segment."""
  found, size = segments(study), options.population
  current = next((g for g in range(len(bounds)) if _missing(found, g, size)), None)
  if current is None:
    return
  queue(study, options, current, bounds, out)
  if current + 1 == len(bounds):
    return
  results = [result(found, m, current) for m in range(size)]
  for member in pbt_plan.sure_to_keep(results, options):
    if _to_queue(found, member, current + 1, options):
      study.enqueue_trial(results[member].params,
                          user_attrs=_attrs(options, member, current + 1, bounds))
      command_line.write(out, f"generation {current + 1}: member {member} goes on before "
                              f"generation {current} has every result: its rank among those "
                              f"in keeps its values", command="sweep")


def _to_queue(found, member, generation, options):
  """Whether the member's segment of `generation` is to be queued: none of it finished,
  runs or waits (and a failed one is retried with --retry_failed)."""
  trials = found.get((member, generation), [])
  if any(fixed_points.is_finished(t) or t.state in fixed_points.ACTIVE for t in trials):
    return False
  return not trials or options.retry_failed


def _attrs(options, member, generation, bounds):
  """The user attributes of the member's segment of `generation`."""
  return {MEMBER: member, GENERATION: generation,
          "model_dir": member_dir(options.sweep_dir, member),
          "start_step": bounds[generation - 1] if generation else 0,
          "program_flags": [f"--train_steps={bounds[generation]}"],
          # Its job draws the member's curves (each segment's job would draw them again).
          "last_segment": generation == len(bounds) - 1}


def _copied(found, options, member, source, generation):
  """What the member took from `source` for `generation`: copied now, or read back from
  the marker of an earlier run of the sweep (the copy it made then)."""
  model_dir = member_dir(options.sweep_dir, member)
  marker = os.path.join(model_dir, "estimator_dist", f"pbt_generation_{generation}.json")
  try:
    with open(marker) as f:
      return json.load(f)
  except (OSError, ValueError):
    pass
  exploited = {"member": source, "trial": result(found, source, generation - 1).number,
               "checkpoint": _exploit(member_dir(options.sweep_dir, source), model_dir)}
  os.makedirs(os.path.dirname(marker), exist_ok=True)
  whole_file.write_json(marker, exploited)
  return exploited


def member_dir(sweep_dir, member):
  return os.path.join(os.path.abspath(sweep_dir), f"member_{member}")


def _plan(found, options, generation):
  """[(values, the member exploited or None)] of each member for `generation` (`pbt_plan`)."""
  if generation == 0:
    return pbt_plan.first(options)
  results = [result(found, m, generation - 1) for m in range(options.population)]
  for member, found_result in enumerate(results):
    if found_result is None:
      raise trial_job.TrialFailed(f"member {member} has no result of generation "
                                  f"{generation - 1} to rank it by.")
  return pbt_plan.plans(results, options, generation)


def segments(study):
  """{(member, generation): its trials} of the study's segments, in trial order."""
  found = {}
  for t in study.get_trials(deepcopy=False):
    if MEMBER in t.user_attrs and not t.user_attrs.get("surplus"):
      found.setdefault((t.user_attrs[MEMBER], t.user_attrs[GENERATION]), []).append(t)
  return found


def result(found, member, generation):
  """The member's first finished segment of `generation` (complete or diverged) among
  `found` (`segments`), else None (a retry of a segment whose runner seemed dead may
  finish too: it does not count)."""
  return next((t for t in found.get((member, generation), ()) if fixed_points.is_finished(t)),
              None)


def _missing(found, generation, size):
  """The members without a result of `generation`."""
  return [m for m in range(size) if not result(found, m, generation)]


_FILE = re.compile(r"^model\.ckpt-\d+\.")


def _exploit(source_dir, target_dir):
  """Replaces the checkpoints of `target_dir` with the latest of `source_dir`; its name."""
  try:
    prefix = checkpoint_names.latest_name(source_dir)
  except OSError:
    prefix = None
  if not prefix:
    raise trial_job.TrialFailed(f"{source_dir} has no checkpoint index to copy a checkpoint "
                                f"from.")
  os.makedirs(target_dir, exist_ok=True)
  for name in os.listdir(target_dir):
    if _FILE.match(name) or name == "checkpoint":
      os.remove(os.path.join(target_dir, name))
  for name in os.listdir(source_dir):
    if name.startswith(prefix + "."):
      temporary = os.path.join(target_dir, name + ".copy")
      shutil.copyfile(os.path.join(source_dir, name), temporary)
      os.replace(temporary, os.path.join(target_dir, name))
  index = os.path.join(target_dir, "checkpoint")
  with open(index + ".copy", "w") as f:
    f.write(f'model_checkpoint_path: "{prefix}"\nall_model_checkpoint_paths: "{prefix}"\n')
  os.replace(index + ".copy", index)
  return prefix
