"""Where a training step's time goes, read from the chief's traces.

TensorFlow's profile of a window of steps (`--profile_steps`, an .xplane.pb) gives, on
the host's threads, each session run, each op that ran, and when each asynchronous op
(an all-reduce, a collective, the input's next batch) was started and when it was done.
Within the training steps the profile marks (Estimator's "train"), each instant is
counted once:
  compute    some op of the model ran;
  input      none did, and the step waited for its batch;
  exchange   none did, and the step waited for a gradient exchange (Horovod's all-reduce,
             tf.distribute's collectives);
  peer       of that wait, the part in which Horovod was still negotiating: the peer
             had not yet asked for the tensor (from Horovod's timeline, horovod only);
  other      nothing of these ran: the executor's own scheduling;
  outside    outside the step's session runs: the hooks (their own session runs too) and
             the Python of each step, the toolkit's and the program's.
The limit a strategy is measured against is the step of independent workers on this
machine plus the exchange of the model's gradients measured alone (allreduce_cost).
"""

import bisect
import collections
import json

# Op types by what they do; every other op of a step counts as compute.
INPUT_OPS = ("IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional",
             "MultiDeviceIteratorGetNextFromShard", "OptionalGetValue")
EXCHANGE_OP_PREFIXES = ("Collective", "Nccl", "Horovod", "_Send", "_Recv", "_HostSend",
                        "_HostRecv")
PARTS = ("compute", "input", "exchange", "peer", "other", "outside")
_TOLERANCE_SECS = 0.001  # Horovod's timeline and the profile agree on an op's end to this.


def union(intervals):
  """The sorted, disjoint union of (start, end) intervals."""
  merged = []
  for start, end in sorted(i for i in intervals if i[1] > i[0]):
    if merged and start <= merged[-1][1]:
      merged[-1] = (merged[-1][0], max(merged[-1][1], end))
    else:
      merged.append((start, end))
  return merged


def length(merged):
  return sum(end - start for start, end in merged)


def intersect(a, b):
  """The intersection of two disjoint sorted unions."""
  found, i, j = [], 0, 0
  while i < len(a) and j < len(b):
    start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
    if start < end:
      found.append((start, end))
    if a[i][1] < b[j][1]:
      i += 1
    else:
      j += 1
  return found


def subtract(a, b):
  """a without b (disjoint sorted unions)."""
  found = []
  for start, end in a:
    for b_start, b_end in b:
      if b_end <= start or b_start >= end:
        continue
      if b_start > start:
        found.append((start, b_start))
      start = max(start, b_end)
      if start >= end:
        break
    if start < end:
      found.append((start, end))
  return found


def op_type(event_name):
  """The op type of a TensorFlow op event ("scope/name:Type"), or None for other events."""
  name, colon, kind = event_name.rpartition(":")
  if not colon or not name or "::" in event_name:
    return None
  return kind if kind.lstrip("_")[:1].isupper() else None


def _part(kind):
  return ("input" if kind in INPUT_OPS else
          "exchange" if kind.startswith(EXCHANGE_OP_PREFIXES) else "compute")


def _text(plane, stat):
  """A stat's text, given inline or by reference."""
  return stat.str_value or plane.stat_metadata[stat.ref_value].name


def _number(stat):
  return getattr(stat, stat.WhichOneof("value"))


def read_trace(path):
  """The host plane of an .xplane.pb, in seconds from its start: {"steps": [(start, end)]
  of the training steps, "runs": [(start, end)] of the session runs, "ops": [(part,
  start, end)] of the ops that ran, "pending": [(part, op name, start, end)] of the
  asynchronous ops, from their start to their done}."""
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  space = xplane_pb2.XSpace()
  with open(path, "rb") as f:
    space.ParseFromString(f.read())
  found = {"steps": [], "runs": [], "ops": [], "pending": []}
  started, done = {}, {}  # By the id that ties an asynchronous op's start to its done.
  for plane in space.planes:
    if plane.name != "/host:CPU":
      continue
    for line in plane.lines:
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name
        start = (line.timestamp_ns * 1000 + event.offset_ps) * 1e-12
        end = start + event.duration_ps * 1e-12
        if name in ("SessionRun", "train"):  # "train": Estimator marks each step.
          found["runs" if name == "SessionRun" else "steps"].append((start, end))
        elif (kind := op_type(name)) is not None:
          found["ops"].append((_part(kind), start, end))
        elif name.startswith("ExecutorState::ProcessAsync::"):
          stats = {plane.stat_metadata[s.metadata_id].name: s for s in event.stats}
          if name.endswith("::Start") and "_p" in stats:
            started[_number(stats["_p"])] = (
                _text(plane, stats["kernel_type"]), _text(plane, stats["name"]), start)
          elif name.endswith("::Done") and "_c" in stats:
            done[_number(stats["_c"])] = end
  for key, (kind, name, start) in started.items():
    if key in done:
      found["pending"].append((_part(kind), name, start, done[key]))
  return found


def horovod_negotiations(path):
  """{tensor name: [(negotiation start, its end, the all-reduce's end)]}, in seconds since
  the epoch, from a Horovod timeline (rank 0's)."""
  with open(path) as f:
    text = f.read().strip().rstrip(",")
  events = json.loads(text if text.endswith("]") else text + "]")
  base, names = 0, {}
  for event in events:
    if event.get("ph") == "M" and event.get("name") == "process_name":
      args = event.get("args", {})
      base = args.get("start_time_since_epoch_in_micros", base)
      if "name" in args:
        names[event["pid"]] = args["name"]
  found, open_by_tensor, negotiated = collections.defaultdict(list), {}, {}
  for event in events:
    stack = open_by_tensor.setdefault(event.get("pid"), [])
    if event.get("ph") == "B":
      stack.append((event["name"], (base + event["ts"]) * 1e-6))
    elif event.get("ph") == "E" and stack:
      phase, start = stack.pop()
      end = (base + event["ts"]) * 1e-6
      if stack:
        continue
      if phase.startswith("NEGOTIATE_"):
        negotiated[event["pid"]] = (start, end)
      elif event["pid"] in negotiated and event["pid"] in names:
        found[names[event["pid"]]].append((*negotiated.pop(event["pid"]), end))
  return dict(found)


def peer_waits(trace, negotiations):
  """The negotiations of Horovod's timeline in the trace's time: its clock is aligned by
  the offset at which the most all-reduces end as the profile saw them done."""
  ends = [(name, end) for _, name, _, end in trace["pending"] if name in negotiations]
  offsets = sorted(end - done for name, end in ends for _, _, done in negotiations[name])
  if not offsets:
    return []
  agreeing = [bisect.bisect_left(offsets, o + _TOLERANCE_SECS) - i
              for i, o in enumerate(offsets)]
  first = agreeing.index(max(agreeing))
  offset = offsets[first + agreeing[first] // 2]  # The middle of the most that agree.
  return [(start + offset, end + offset) for spans in negotiations.values()
          for start, end, _ in spans]


def of_window(trace, *, peer=()):
  """Per step, in seconds: PARTS of the training steps in `trace` (`read_trace` of one
  task), and the step itself, from the start of the first step the profile marks to that
  of the last. The time outside the session runs is outside; where the profile has no
  session run (multi_worker's master session runs the step), only the time between steps
  is, and the hooks count in other. `peer`: when Horovod negotiated."""
  starts = sorted(start for start, _ in trace["steps"])
  if len(starts) < 2:
    raise ValueError("the profile marks fewer than two training steps: was its window "
                     "inside training?")
  window = [(starts[0], starts[-1])]
  # Each step's training run is its longest; a hook's own runs count as outside.
  runs = [max(inside, key=lambda r: r[1] - r[0]) for start, end in trace["steps"]
          if (inside := [r for r in trace["runs"] if start <= r[0] < end])]
  left = intersect(union(runs or trace["steps"]), window)
  sessions = length(left)
  seconds = {}
  for part in ("compute", "input", "exchange"):
    spans = ([(s, e) for p, s, e in trace["ops"] if p == part] +
             [(s, e) for p, _, s, e in trace["pending"] if p == part])
    taken = intersect(union(spans), left)
    seconds[part], left = length(taken), subtract(left, taken)
  seconds["peer"] = length(intersect(union(peer), taken))  # Of the exchange's wait.
  seconds["exchange"] -= seconds["peer"]
  seconds["other"] = length(left)
  seconds["outside"] = length(window) - sessions
  count = len(starts) - 1
  return {"steps": count, "step": length(window) / count,
          **{part: seconds[part] / count for part in PARTS}}
