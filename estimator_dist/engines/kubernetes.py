"""Kubernetes: the Kubeflow training-operator manifest that runs a job.

  estimator-dist k8s --strategy=parameter_server --num_workers=4 --num_ps=2 --evaluator \\
      --image=registry/train:1 -- python train.py --model_dir=/shared/run | kubectl apply -f -

tf.distribute strategies become a TFJob (kubeflow.org/v1): the operator starts one pod
per replica, a headless service per pod, and writes each pod's TF_CONFIG, which
estimator_dist.contract.cluster reads. Horovod becomes an MPIJob (kubeflow.org/v1): a launcher
pod runs mpirun over the worker pods.

Preemption: Kubernetes sends SIGTERM to every pod it evicts and kills it
terminationGracePeriodSeconds later, set here above --preemption_grace_secs: the tasks
stop at one agreed step and the chief saves a checkpoint there (task/preemption.py); the
launcher pod of an MPIJob passes it to mpirun as USR1, which mpirun forwards to the ranks.
A TFJob keeps its pods when the chief ends (cleanPodPolicy None): the evaluator finishes
its final evaluation, and ps tasks exit once every training task has ended.
"""

import dataclasses
import os
import re
import shlex
import sys
import uuid
from typing import Dict, Optional

import yaml
from absl import flags

from estimator_dist import command_line
from estimator_dist import errors
from estimator_dist import option_flags
from estimator_dist.contract import checkpoint_names
from estimator_dist.contract import task_env
from estimator_dist.instrument import in_container
from estimator_dist.instrument import launching
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import model_dir_arg
from estimator_dist.jobs import spec
from estimator_dist.option_flags import option
from estimator_dist.supervision import signal_forwarding

API_VERSION = "kubeflow.org/v1"
TF_CONTAINER = "tensorflow"  # The container the TFJob operator gives TF_CONFIG to.
TF_PORT_NAME = "tfjob-port"
MPI_CONTAINER = "mpi"
MPI_HOSTFILE = "/etc/mpi/hostfile"  # Written by the operator into the launcher pod.
RESTART_POLICIES = ("OnFailure", "Never", "Always", "ExitCode")
TERMINATION_MARGIN_SECS = 15  # Past the grace: the kubelet's SIGKILL comes after this too.
JOB_NAME_LABEL = "training.kubeflow.org/job-name"  # Set by the operator on each pod.
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclasses.dataclass(frozen=True, kw_only=True)
class KubernetesOptions:
  """The manifest's settings, each with its flag; image is required."""
  image: Optional[str] = option(None, kind="string", help="Container image with the "
                                "program and estimator_dist.")
  name: str = option("estimator-dist", kind="string", help="Job name (a DNS label).")
  namespace: Optional[str] = option(None, kind="string",
                                    help="Namespace of the job (default: kubectl's).")
  restart_policy: str = option("OnFailure", kind="enum", values=RESTART_POLICIES,
                               help="Restart policy of pods.")
  backoff_limit: int = option(3, kind="integer", lower_bound=0,
                              help="Restarts before the job is marked failed.")
  cpu: Optional[str] = option(None, kind="string",
                              help="CPU request and limit per pod, e.g. 4.")
  memory: Optional[str] = option(None, kind="string",
                                 help="Memory request and limit per pod, e.g. 8Gi.")
  gpus: int = option(0, kind="integer", lower_bound=0,
                     help="nvidia.com/gpu per training pod.")
  volume_claim: Optional[str] = option(None, kind="string", help="A PersistentVolumeClaim "
                                       "for the shared model_dir, as CLAIM:MOUNT_PATH.")
  port: int = option(2222, kind="integer", lower_bound=1,
                     help="TensorFlow server port in each pod.")
  network_policy: bool = option(
      True, kind="bool", help="Also print a NetworkPolicy that lets only the job's own pods "
      "reach its pods: their servers have no authentication.")
  instrument: str = option(
      "auto", kind="enum", values=launch_options.INSTRUMENT,
      help="auto: a program that does not import estimator_dist trains as written (as "
      "under `estimator-dist launch`; it needs a model_dir on --volume_claim); off: it runs "
      "as it is.")
  model_dir: Optional[str] = option(
      None, kind="string", help="The job's model_dir, where the Estimators of a program that "
      "names none train (default: the program's --model_dir).")
  preemption_grace_secs: float = option(
      task_env.DEFAULT_PREEMPTION_GRACE_SECS, kind="float", lower_bound=0.0,
      help="An evicted pod's tasks get this long to stop at one agreed step and save a "
      "checkpoint there (the pods' terminationGracePeriodSeconds is "
      f"{TERMINATION_MARGIN_SECS}s longer); 0: SIGTERM ends them at once.")

  def __post_init__(self):
    if not self.image:
      raise errors.ConfigError("--image is required: the container image that holds the "
                               "program and estimator_dist.")
    if not _NAME.match(self.name or ""):
      raise errors.ConfigError(
          f"--name ({self.name!r}) must be a DNS label: lowercase letters, digits and '-', "
          f"starting with a letter, at most 63 characters.")
    errors.check_choice("--restart_policy", self.restart_policy, RESTART_POLICIES)
    errors.check_choice("--instrument", self.instrument, launch_options.INSTRUMENT)
    errors.check_non_negative_number("--preemption_grace_secs", self.preemption_grace_secs)
    if self.volume_claim:
      claim, _, path = self.volume_claim.partition(":")
      if not claim or not path.startswith("/"):
        raise errors.ConfigError(
            f"--volume_claim ({self.volume_claim!r}) must be CLAIM:/mount/path.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class KubernetesFlags:
  """The flags of `estimator-dist k8s`, as FlagHolders: the job's, and {field: holder}
  of KubernetesOptions'."""
  job: spec.JobFlags
  settings: Dict[str, flags.FlagHolder]

  def options(self) -> KubernetesOptions:
    return option_flags.options_from_flags(KubernetesOptions, self.settings)


def define_flags(flag_values=flags.FLAGS) -> KubernetesFlags:
  """Defines the flags of `estimator-dist k8s` on `flag_values`."""
  return KubernetesFlags(
      job=spec.define_flags(flag_values, num_workers_help="Training pods (mirrored: "
                            "replicas in one pod)."),
      settings=option_flags.define_flags(KubernetesOptions, flag_values=flag_values))


def _container(name, image, command, resources, mounts, env, port=None):
  container = {"name": name, "image": image, "command": list(command),
               "env": task_env.kubernetes_env(env)}
  if port:
    container["ports"] = [{"name": TF_PORT_NAME, "containerPort": port}]
  if resources:
    container["resources"] = {"requests": dict(resources), "limits": dict(resources)}
  if mounts:
    container["volumeMounts"] = mounts
  return container


def _replica(replicas, restart_policy, container, volumes, grace_secs):
  spec = {"terminationGracePeriodSeconds": (task_env.whole_seconds(grace_secs) +
                                            TERMINATION_MARGIN_SECS),
          "containers": [container]}
  if volumes:
    spec["volumes"] = volumes
  return {"replicas": replicas, "restartPolicy": restart_policy, "template": {"spec": spec}}


def manifest(job, *, options, mailbox=None):
  """The job (a JobSpec) as a dict: a TFJob, or an MPIJob for horovod. `mailbox`: the
  mailbox of a program its tasks instrument (`instrumented_mailbox`), or None."""
  num_workers = job.num_workers
  restart_policy, image = options.restart_policy, options.image
  resources = {k: v for k, v in (("cpu", options.cpu), ("memory", options.memory)) if v}
  training_resources = {**resources,
                        **({"nvidia.com/gpu": options.gpus} if options.gpus else {})}
  volumes, mounts = [], []
  if options.volume_claim:
    claim, _, path = options.volume_claim.partition(":")
    volumes = [{"name": "model-dir", "persistentVolumeClaim": {"claimName": claim}}]
    mounts = [{"name": "model-dir", "mountPath": path}]
  program = list(job.command)
  if mailbox:  # Each task instruments it (in_container); a pod restarted alone is refused.
    program = [_python(job), "-m", in_container.__name__, "--", *program]
    restart_policy = "Never"
  metadata = {"name": options.name,
              **({"namespace": options.namespace} if options.namespace else {})}
  grace = options.preemption_grace_secs
  env = task_env.task_environment(  # Every pod's.
      job=job, preemption_grace_secs=grace, model_dir=options.model_dir, mailbox=mailbox)
  run_policy = {"cleanPodPolicy": "Running", "backoffLimit": options.backoff_limit}

  if job.traits.ranks_from_horovodrun:  # Ranks that mpirun starts in the worker pods.
    mpirun = ["mpirun", "--allow-run-as-root", "-np", str(num_workers), "--hostfile",
              MPI_HOSTFILE, "-bind-to", "none", "-map-by", "slot", "-x", "PATH",
              "-x", "LD_LIBRARY_PATH", "-x", "PYTHONPATH",
              *[part for name in env for part in ("-x", name)], *program]
    if grace:  # The pod's SIGTERM reaches the ranks as USR1, through mpirun.
      step = shlex.join(mpirun[:-len(program)]) + (
          f" {signal_forwarding.IGNORING_USR1} {shlex.join(program)}")
      mpirun = ["bash", "-c", "\n".join([
          *signal_forwarding.trap("TERM"),
          *signal_forwarding.lines(step, forward='kill -USR1 "$step_pid"'), 'exit "$code"'])]
    launcher = _container(MPI_CONTAINER, image, mpirun, resources, mounts, env)
    worker = _container(MPI_CONTAINER, image, ["sleep", "infinity"], training_resources,
                        mounts, env)
    return {"apiVersion": API_VERSION, "kind": "MPIJob", "metadata": metadata, "spec": {
        "slotsPerWorker": 1, "runPolicy": run_policy, "mpiReplicaSpecs": {
            "Launcher": _replica(1, restart_policy, launcher, volumes, grace),
            "Worker": _replica(num_workers, restart_policy, worker, volumes, grace)}}}

  one_pod = job.traits.one_process
  counts = [("Chief", 1), ("Worker", 0 if one_pod else num_workers - 1), ("PS", job.num_ps),
            ("Evaluator", int(job.evaluator))]
  specs = {}
  for role, replicas in counts:
    if replicas:
      trains = role in ("Chief", "Worker")
      container = _container(TF_CONTAINER, image, program,
                             training_resources if trains else resources, mounts, env,
                             options.port)
      specs[role] = _replica(replicas, restart_policy, container, volumes, grace)
  # The operator's default (Running) removes the evaluator as the chief ends, before its
  # final evaluation (kubeflow/trainer#1658); every task here ends by itself.
  return {"apiVersion": API_VERSION, "kind": "TFJob", "metadata": metadata, "spec": {
      "runPolicy": {**run_policy, "cleanPodPolicy": "None"}, "tfReplicaSpecs": specs}}


def _python(job):
  """The program's `python`, as the image finds it; python3 for another program."""
  program = job.command[0]
  return program if os.path.basename(program).startswith("python") else "python3"


def instrumented_mailbox(job, options):
  """The job's mailbox for a program its tasks instrument (launching.instrumented, read
  here: run `estimator-dist k8s` where the program is), new for each manifest, in its
  model_dir on the shared volume; None for a program that imports estimator_dist. A
  ConfigError when the model_dir is not on --volume_claim's mount."""
  if options.instrument != "auto" or not launching.instrumented(job.command):
    return None
  model_dir = options.model_dir or model_dir_arg.program_model_dir(list(job.command[1:]))
  mount = options.volume_claim and options.volume_claim.partition(":")[2].rstrip("/")
  if not (model_dir and mount and os.path.normpath(model_dir).startswith(mount + "/")):
    raise errors.ConfigError(
        f"the pods of a program that does not import estimator_dist agree through the "
        f"job's model_dir, which must be on the volume every pod mounts: give "
        f"--volume_claim=CLAIM:/mount and --model_dir (or the program's --model_dir) under "
        f"/mount (it is {model_dir or 'not given'}), or run the program as it is with "
        f"--instrument=off.")
  return os.path.join(os.path.normpath(model_dir), checkpoint_names.TOOLKIT_DIR,
                      f"mailbox-k8s-{options.name}-{uuid.uuid4().hex[:12]}")


def network_policy(name, namespace=None):
  """A NetworkPolicy that admits only the job's pods (the operator labels them)."""
  pods = {"matchLabels": {JOB_NAME_LABEL: name}}
  return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": f"{name}-own-pods-only",
                       **({"namespace": namespace} if namespace else {})},
          "spec": {"podSelector": pods, "policyTypes": ["Ingress"],
                   "ingress": [{"from": [{"podSelector": pods}]}]}}


class _Dumper(yaml.SafeDumper):
  """YAML without anchors and aliases, which some sites' admission tools refuse."""

  def ignore_aliases(self, data):
    return True


def _yaml(k8s_flags, command):
  """The YAML documents of the job: its manifest, and its NetworkPolicy."""
  options = k8s_flags.options()
  job = k8s_flags.job.job(command)
  mailbox = instrumented_mailbox(job, options)
  if mailbox:
    program = os.path.basename(launching.instrumented(job.command))
    command_line.write(sys.stderr, (
        f"instrumenting {program}: it does not import estimator_dist, so each pod starts "
        f"the job's {job.strategy} strategy as it imports TensorFlow and routes its "
        f"Estimator calls; the pods agree through {mailbox}, new with this manifest, and "
        f"run with restartPolicy Never (a pod restarted alone would meet rounds its peers "
        f"made): to resume, print a new manifest and apply it (--instrument=off: run the "
        f"program as it is)"), "k8s")
  documents = [manifest(job, options=options, mailbox=mailbox)]
  if options.network_policy:
    documents.append(network_policy(options.name, options.namespace))
  return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False)


def manifest_from_args(args):
  """The YAML documents for command-line `args` (flags, --, program), parsed in-process."""
  values = flags.FlagValues()
  k8s_flags = define_flags(values)
  rest = values(["estimator-dist k8s", *args])
  return _yaml(k8s_flags, rest[1:])


def main(argv, k8s_flags):
  try:
    text = _yaml(k8s_flags, argv[1:])
  except errors.ConfigError as e:
    command_line.write_error(str(e), "k8s")
    return 2
  sys.stdout.write(text)
  return 0


def run():
  k8s_flags = define_flags()
  command_line.run(lambda argv: main(argv, k8s_flags), command="k8s")
