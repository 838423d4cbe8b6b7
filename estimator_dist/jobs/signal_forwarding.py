"""The shell lines that run an engine's step so that a preemption signal reaches its tasks.

bash runs a trap only between commands, or while it `wait`s: a step started in the
foreground would get the signal only after it ended. So the step runs in the background;
the trap marks the request, and the shell passes the signal on (SLURM: `scancel
--signal=USR1` to the job's steps; Kubernetes: `kill -USR1` to mpirun, which forwards it
to every rank) every few seconds until the step has ended. A task started through
`IGNORING_USR1` ignores the signal until its program catches it, so one that comes during
its start does not end it, and the next one reaches it; a repeat changes nothing.
"""

# Before a task's program: USR1 is ignored until the program sets its handler (an
# ignored signal stays ignored across exec).
IGNORING_USR1 = """bash -c 'trap "" USR1; exec "$@"' task"""


def lines(step, *, trap, forward, every_secs=2):
  """Lines that run `step` (a shell command) and, once `trap` (a signal's name) came,
  run `forward` every `every_secs` until it ends; then `$code` is its exit code."""
  return [
      "preempted=0 ended=0 code=0",
      f"trap 'preempted=1' {trap}",
      f"{step} &",
      "step_pid=$!",
      'while [ "$ended" = 0 ] && kill -0 "$step_pid" 2>/dev/null; do',
      '  if [ "$preempted" = 1 ]; then',
      f"    {forward} || true",
      f"    sleep {every_secs}",
      "  else  # Returns early when the trap runs.",
      '    code=0; wait "$step_pid" || code=$?',
      '    kill -0 "$step_pid" 2>/dev/null || ended=1',
      "  fi",
      "done",
      'if [ "$ended" = 0 ]; then code=0; wait "$step_pid" || code=$?; fi']
