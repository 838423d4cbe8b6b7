"""`estimator-dist launch`: start a training program as a local multi-process job.

  python -m estimator_dist.launch --strategy=parameter_server --num_workers=2 \\
      --num_ps=1 --evaluator -- python -m model_zoo.mnist_cnn --train_steps=300

The flags become a JobSpec and LaunchOptions; `estimator_dist.jobs.launcher` runs them.
"""

import dataclasses
import signal
import sys
from typing import Dict

from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.jobs import horovodrun
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import launcher
from estimator_dist.jobs import spec


@dataclasses.dataclass(frozen=True, kw_only=True)
class LaunchFlags:
  """The launcher's flags, as FlagHolders: the job's, and {field: holder} of the options
  they set (LaunchOptions, horovodrun.HorovodRun and, with --elastic, its Elastic)."""
  job: spec.JobFlags
  launch: Dict[str, flags.FlagHolder]
  horovod: Dict[str, flags.FlagHolder]
  elastic: flags.FlagHolder
  elastic_range: Dict[str, flags.FlagHolder]

  def options(self) -> launch_options.LaunchOptions:
    elastic = None
    if self.elastic.value:
      given = option_flags.values_of(self.elastic_range)
      elastic = horovodrun.Elastic(**{
          **given, "min_workers": given["min_workers"] or 1,
          "max_workers": given["max_workers"] or self.job.value("num_workers")})
    run = option_flags.options_from_flags(horovodrun.HorovodRun, self.horovod,
                                          elastic=elastic)
    return option_flags.options_from_flags(launch_options.LaunchOptions, self.launch, horovod=run)


def define_flags(flag_values=flags.FLAGS) -> LaunchFlags:
  """Defines the launcher's flags on `flag_values`."""
  f = flag_values
  return LaunchFlags(
      job=spec.define_flags(f),
      launch=option_flags.define_flags(launch_options.LaunchOptions, flag_values=f),
      horovod=option_flags.define_flags(horovodrun.HorovodRun, flag_values=f),
      elastic=flags.DEFINE_bool(
          "elastic", False, "horovod: elastic training; ranks come and go between "
          "--min_workers and --max_workers as the hosts change.", flag_values=f),
      elastic_range=option_flags.define_flags(horovodrun.Elastic, flag_values=f))


def main(argv, launch_flags):
  try:
    job = launch_flags.job.job(argv[1:])
    return launcher.launch(job, options=launch_flags.options())
  except errors.ConfigError as e:
    command_line.write_error(str(e), "launch")
    return 2
  finally:
    # Everything is stopped and removed: one more Ctrl-C changes nothing, nor the exit code.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _exit_on_signal(signum, _):
  sys.exit(128 + signum)


def run():
  launch_flags = define_flags()
  # Ctrl-C before the job starts ends the launcher as Ctrl-C during the job does: exit
  # code 130, no traceback.
  signal.signal(signal.SIGINT, _exit_on_signal)
  command_line.run(lambda argv: main(argv, launch_flags), command="launch")


if __name__ == "__main__":
  run()
