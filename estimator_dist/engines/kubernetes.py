"""Kubernetes: the manifest that runs a job, for `kubectl apply`.

  estimator-dist k8s --strategy=parameter_server --num_workers=4 --num_ps=2 --evaluator \\
      --image=registry/train:1 -- python train.py --model_dir=/shared/run | kubectl apply -f -

tf.distribute strategies become a JobSet (jobset.x-k8s.io), horovod an MPIJob of the MPI
Operator (kubeflow.org/v2beta1); --kubeflow_v1 prints Training Operator v1's TFJob and
MPIJob instead (engines/k8s_kinds.py). The pods, their resources and the site's pod
template: engines/k8s_pods.py. --queue puts the job in a Kueue LocalQueue.

Preemption: Kubernetes sends SIGTERM to every pod it evicts and kills it
terminationGracePeriodSeconds later, set here above --preemption_grace_secs: the tasks
stop at one agreed step and the chief saves a checkpoint there (task/preemption.py); the
launcher pod of an MPIJob passes it to mpirun as USR1, which mpirun forwards to the ranks.
A JobSet then starts every pod again from that checkpoint, without counting it among
--backoff_limit's restarts.
"""

import dataclasses
import os
import re
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
from estimator_dist.engines import k8s_kinds
from estimator_dist.engines import k8s_pods
from estimator_dist.instrument import in_container
from estimator_dist.instrument import launching
from estimator_dist.jobs import launch_options
from estimator_dist.jobs import model_dir_arg
from estimator_dist.jobs import spec
from estimator_dist.option_flags import option

RESTART_POLICIES = ("OnFailure", "Never", "Always", "ExitCode")
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclasses.dataclass(frozen=True, kw_only=True)
class KubernetesOptions:
  """The manifest's settings, each with its flag; image is required."""
  image: Optional[str] = option(None, kind="string", help="Container image with the "
                                "program and estimator_dist.")
  name: str = option("estimator-dist", kind="string", help="Job name (a DNS label).")
  namespace: Optional[str] = option(None, kind="string",
                                    help="Namespace of the job (default: kubectl's).")
  kubeflow_v1: bool = option(
      False, kind="bool", help="Print Training Operator v1's TFJob and MPIJob "
      "(kubeflow.org/v1), for clusters still on it, instead of a JobSet (tf.distribute) and "
      "the MPI Operator's MPIJob v2beta1 (horovod).")
  restart_policy: Optional[str] = option(
      None, kind="enum", values=RESTART_POLICIES, help="The restart policy of an MPIJob's "
      "pods, and with --kubeflow_v1 of a TFJob's (default OnFailure); a JobSet has none: it "
      "starts all its pods again when one fails, --backoff_limit times.")
  backoff_limit: int = option(3, kind="integer", lower_bound=0,
                              help="Restarts before the job is marked failed (a "
                              "preemption's do not count in a JobSet).")
  queue: Optional[str] = option(None, kind="string", help="Kueue's LocalQueue for the job "
                                "(the label kueue.x-k8s.io/queue-name); Kueue admits it by "
                                "its pods' requests: give --cpu and --memory.")
  pod_template: Optional[str] = option(
      None, kind="string", help="A YAML file with a PodTemplateSpec (metadata, spec) merged "
      "into every pod: nodeSelector, tolerations, affinity, serviceAccountName, "
      "imagePullSecrets, volumes, env, securityContext... A field the job sets itself is "
      "refused there.")
  cpu: Optional[str] = option(None, kind="string",
                              help="CPU request and limit of each pod of every role, e.g. "
                              "4 (an MPI launcher pod: 500m).")
  memory: Optional[str] = option(None, kind="string",
                                 help="Memory request and limit of each pod of every role, "
                                 "e.g. 8Gi (an MPI launcher pod: 512Mi).")
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
      f"{k8s_pods.TERMINATION_MARGIN_SECS}s longer); 0: SIGTERM ends them at once.")

  def __post_init__(self):
    if not self.image:
      raise errors.ConfigError("--image is required: the container image that holds the "
                               "program and estimator_dist.")
    if not _NAME.match(self.name or ""):
      raise errors.ConfigError(
          f"--name ({self.name!r}) must be a DNS label: lowercase letters, digits and '-', "
          f"starting with a letter, at most 63 characters.")
    option_flags.check_declared(self)
    if self.queue and not (self.cpu and self.memory):
      raise errors.ConfigError(
          "--queue: Kueue admits a job by its pods' requests, and without --cpu and "
          "--memory they request nothing: give both.")
    if self.volume_claim:
      claim, path = self.claim_and_mount
      if not claim or not path.startswith("/"):
        raise errors.ConfigError(
            f"--volume_claim ({self.volume_claim!r}) must be CLAIM:/mount/path.")

  @property
  def claim_and_mount(self):
    """(claim, mount path) of --volume_claim; (None, None) without one."""
    if not self.volume_claim:
      return None, None
    claim, _, path = self.volume_claim.partition(":")
    return claim, path


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


def manifest(job, *, options, mailboxes=None, site=None):
  """The job (a JobSpec) as a dict: a JobSet, or an MPIJob for horovod (with
  options.kubeflow_v1, a TFJob or an MPIJob of kubeflow.org/v1). `mailboxes`: where the
  mailboxes of a program its tasks instrument go (`instrumented_mailboxes`), or None;
  `site`: the --pod_template's PodTemplateSpec, or None."""
  program, restart_policy = list(job.command), options.restart_policy or "OnFailure"
  if options.restart_policy and not (options.kubeflow_v1 or job.traits.ranks_from_horovodrun):
    raise errors.ConfigError(
        f"--restart_policy={options.restart_policy} has no place in a JobSet: it starts all "
        f"its pods again when one fails, up to --backoff_limit times. Leave it out, or "
        f"give --kubeflow_v1 for a TFJob whose pods restart alone.")
  mailbox = None
  if mailboxes:  # Each task instruments it (in_container), and starts once per mailbox.
    program = [launching.python_of(job.command), "-m", in_container.__name__, "--", *program]
    if job.traits.ranks_from_horovodrun or options.kubeflow_v1:
      if options.restart_policy not in (None, "Never"):
        raise errors.ConfigError(
            f"--restart_policy={options.restart_policy}: the pods of a program they "
            f"instrument agree on its calls through a mailbox new for each start of the "
            f"job, so a pod started again alone could not join the others; they run with "
            f"Never. Leave --restart_policy out.")
      restart_policy = "Never"
    if job.traits.ranks_from_horovodrun:  # New for each launcher pod: a restart is a new pod.
      mailbox = k8s_kinds.mpijob_mailbox(mailboxes)
    elif options.kubeflow_v1:  # New with the manifest: a pod recreated alone is refused.
      mailbox = f"{mailboxes}/mailbox-k8s-{options.name}-{uuid.uuid4().hex[:12]}"
    else:  # New for each JobSet and each of its restarts.
      mailbox = k8s_kinds.jobset_mailbox(mailboxes)
  env = task_env.task_environment(  # Every pod's.
      job=job, preemption_grace_secs=options.preemption_grace_secs,
      model_dir=options.model_dir, mailbox=mailbox)
  pods = task_env.kubernetes_env(env)
  if job.traits.ranks_from_horovodrun:
    return k8s_kinds.mpijob(job, options=options, program=program, env=pods, names=list(env),
                            site=site, restart_policy=restart_policy,
                            version="v1" if options.kubeflow_v1 else "v2beta1")
  if options.kubeflow_v1:
    return k8s_kinds.tfjob_v1(job, options=options, program=program, env=pods, site=site,
                              restart_policy=restart_policy)
  return k8s_kinds.jobset(job, options=options, program=program, env=pods, site=site)


def instrumented_mailboxes(job, options):
  """Where the mailboxes of a program its tasks instrument (launching.instrumented, read
  here: run `estimator-dist k8s` where the program is) go: its model_dir on the shared
  volume; None for a program that imports estimator_dist. A ConfigError when the
  model_dir is not on --volume_claim's mount."""
  if options.instrument != "auto" or not launching.instrumented(job.command):
    return None
  model_dir = options.model_dir or model_dir_arg.program_model_dir(list(job.command[1:]))
  mount = (options.claim_and_mount[1] or "").rstrip("/")
  if not (model_dir and mount and os.path.normpath(model_dir).startswith(mount + "/")):
    raise errors.ConfigError(
        f"the pods of a program that does not import estimator_dist agree through the "
        f"job's model_dir, which must be on the volume every pod mounts: give "
        f"--volume_claim=CLAIM:/mount and --model_dir (or the program's --model_dir) under "
        f"/mount (it is {model_dir or 'not given'}), or run the program as it is with "
        f"--instrument=off.")
  return os.path.join(os.path.normpath(model_dir), checkpoint_names.TOOLKIT_DIR)


def network_policy(options, manifest_):
  """A NetworkPolicy that admits only the pods of the job `manifest_` (its controller
  labels them)."""
  key = (k8s_kinds.JOBSET_NAME_LABEL if manifest_["kind"] == "JobSet" else
         k8s_kinds.KUBEFLOW_NAME_LABEL)
  pods = {"matchLabels": {key: options.name}}
  return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": f"{options.name}-own-pods-only",
                       **({"namespace": options.namespace} if options.namespace else {})},
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
  site = options.pod_template and k8s_pods.read_template(options.pod_template)
  mailboxes = instrumented_mailboxes(job, options)
  if mailboxes:
    program = os.path.basename(launching.instrumented(job.command))
    command_line.write(sys.stderr, (
        f"instrumenting {program}: it does not import estimator_dist, so each pod starts "
        f"the job's {job.strategy} strategy as it imports TensorFlow and routes its "
        f"Estimator calls; the pods agree through a mailbox in {mailboxes}, new for each "
        f"start of the job (--instrument=off: run the program as it is)"), "k8s")
  documents = [manifest(job, options=options, mailboxes=mailboxes, site=site)]
  if options.network_policy:
    documents.append(network_policy(options, documents[0]))
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
