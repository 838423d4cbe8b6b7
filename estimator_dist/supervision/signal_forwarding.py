"""The shell lines that run an engine's step so that a preemption signal reaches its tasks.

bash runs a trap only between commands, or while it `wait`s: a step started in the
foreground would get the signal only after it ended. So the step runs in the background;
the trap (`TRAP`, set at the script's top, before anything can take long) marks the
request, and the shell passes the signal on (SLURM: `scancel --signal=USR1` to the job's
steps; Kubernetes: `kill -USR1` to mpirun, which forwards it to every rank) every few
seconds until the step has ended. A task started through `IGNORING_USR1` ignores the
signal until its program catches it, so one that comes during its start does not end it,
and the next one reaches it; a repeat changes nothing.
"""

# Before a task's program: USR1 is ignored until the program sets its handler (an
# ignored signal stays ignored across exec).
IGNORING_USR1 = """bash -c 'trap "" USR1; exec "$@"' task"""


def trap(signals):
  """The script's first lines: `signals` (names) mark a request from then on."""
  return ["preempted=0", f"trap 'preempted=1' {signals}"]


def lines(step, *, forward, every_secs=2):
  """Lines that run `step` (a shell command) and, once a request is marked (`trap`), run
  `forward` every `every_secs` until it ends; then `$code` is its exit code."""
  return [
      f"{step} &",
      "step_pid=$!",
      'while kill -0 "$step_pid" 2>/dev/null; do',
      '  if [ "$preempted" = 1 ]; then',
      f"    {forward} || true",
      f"    sleep {every_secs}",
      "  else",
      '    wait "$step_pid" || true  # Returns early when the trap runs.',
      "  fi",
      "done",
      "# bash keeps the status of a step it has waited for.",
      'code=0; wait "$step_pid" || code=$?']
