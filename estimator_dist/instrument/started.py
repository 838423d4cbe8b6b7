"""When this process started, about: imported by the `sitecustomize` of an instrumented
task as the interpreter starts. A round's result written before it is an earlier job's."""

import time

STARTED = time.time()
