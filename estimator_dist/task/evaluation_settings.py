"""What the options of an evaluation name, without TensorFlow (the training flags' help
and checks use them; `evaluation` evaluates): the exporters' kinds and the default
timeout."""

EXPORTER_KINDS = ("latest", "best", "final")
# Without --eval_timeout_secs, an evaluation may take this many times the longest one so
# far, and at least the floor (also the first one's timeout).
TIMEOUT_MULTIPLE = 10
TIMEOUT_FLOOR_SECS = 1800
