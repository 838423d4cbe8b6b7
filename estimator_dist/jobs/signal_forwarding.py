"""The shell lines that run an engine's step so that a preemption signal reaches its tasks.

bash runs a trap only between commands, or while it `wait`s: a step started in the
foreground would get the signal only after it ended. So the step runs in the background,
the trap passes the signal on (SLURM: `scancel --signal=USR1` to the job's steps;
Kubernetes: `kill -USR1` to mpirun, which forwards it to every rank), and the shell waits
again after each trap until the step has ended; `$code` is then its exit code.
"""


def lines(step, *, trap, forward):
  """Lines that run `step` (a shell command) and, on `trap` (a signal's name), run
  `forward`; after them, `$code` holds the step's exit code."""
  return [
      f"trap '{forward}' {trap}",
      f"{step} &",
      "step_pid=$!",
      'code=0; wait "$step_pid" || code=$?',
      'while kill -0 "$step_pid" 2>/dev/null; do code=0; wait "$step_pid" || code=$?; done']
