"""Kubernetes: the Kubeflow training-operator manifest that runs a job.

  estimator-dist k8s --strategy=parameter_server --num_workers=4 --num_ps=2 --evaluator \\
      --image=registry/train:1 -- python train.py --model_dir=/shared/run | kubectl apply -f -

tf.distribute strategies become a TFJob (kubeflow.org/v1): the operator starts one pod
per replica, a headless service per pod, and writes each pod's TF_CONFIG, which
estimator_dist.cluster reads. Horovod becomes an MPIJob (kubeflow.org/v1): a launcher
pod runs mpirun over the worker pods.
"""

import re
import sys

import yaml
from absl import app
from absl import flags

from estimator_dist import cluster as cluster_lib
from estimator_dist import errors
from estimator_dist import jobs
from estimator_dist.strategies import factory

API_VERSION = "kubeflow.org/v1"
TF_CONTAINER = "tensorflow"  # The container the TFJob operator gives TF_CONFIG to.
TF_PORT_NAME = "tfjob-port"
MPI_CONTAINER = "mpi"
MPI_HOSTFILE = "/etc/mpi/hostfile"  # Written by the operator into the launcher pod.
RESTART_POLICIES = ("OnFailure", "Never", "Always", "ExitCode")
JOB_NAME_LABEL = "training.kubeflow.org/job-name"  # Set by the operator on each pod.
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


def define_flags():
  jobs.define_flags("Training pods (mirrored: replicas in one pod).")
  flags.DEFINE_string("image", None, "Container image with the program and estimator_dist.")
  flags.DEFINE_string("name", "estimator-dist", "Job name (a DNS label).")
  flags.DEFINE_string("namespace", None, "Namespace of the job (default: kubectl's).")
  flags.DEFINE_enum("restart_policy", "OnFailure", RESTART_POLICIES, "Restart policy of pods.")
  flags.DEFINE_integer("backoff_limit", 3, "Restarts before the job is marked failed.",
                       lower_bound=0)
  flags.DEFINE_string("cpu", None, "CPU request and limit per pod, e.g. 4.")
  flags.DEFINE_string("memory", None, "Memory request and limit per pod, e.g. 8Gi.")
  flags.DEFINE_integer("gpus", 0, "nvidia.com/gpu per training pod.", lower_bound=0)
  flags.DEFINE_string("volume_claim", None, "A PersistentVolumeClaim for the shared model_dir, "
                      "as CLAIM:MOUNT_PATH.")
  flags.DEFINE_integer("port", 2222, "TensorFlow server port in each pod.", lower_bound=1)
  flags.DEFINE_bool("network_policy", True, "Also print a NetworkPolicy that lets only the "
                    "job's own pods reach its pods: their servers have no authentication.")


def _container(name, image, command, resources, mounts, port=None):
  container = {"name": name, "image": image, "command": list(command)}
  if port:
    container["ports"] = [{"name": TF_PORT_NAME, "containerPort": port}]
  if resources:
    container["resources"] = {"requests": dict(resources), "limits": dict(resources)}
  if mounts:
    container["volumeMounts"] = mounts
  return container


def _replica(replicas, restart_policy, container, volumes):
  spec = {"containers": [container]}
  if volumes:
    spec["volumes"] = volumes
  return {"replicas": replicas, "restartPolicy": restart_policy, "template": {"spec": spec}}


def manifest(command, strategy, num_workers, image, num_ps=None, evaluator=False,
             name="estimator-dist", namespace=None, restart_policy="OnFailure",
             backoff_limit=3, cpu=None, memory=None, gpus=0, volume_claim=None, port=2222):
  """The job as a dict: a TFJob, or an MPIJob for horovod."""
  strategy = factory.ALIASES.get(strategy, strategy)
  num_ps = jobs.default_num_ps(strategy, num_ps)
  jobs.check_topology(strategy, num_workers, num_ps, evaluator)
  jobs.check_command(command)
  if not image:
    raise errors.ConfigError("--image is required: the container image that holds the "
                             "program and estimator_dist.")
  if not _NAME.match(name or ""):
    raise errors.ConfigError(f"--name ({name!r}) must be a DNS label: lowercase letters, "
                             f"digits and '-', starting with a letter, at most 63 characters.")
  errors.check_choice("restart_policy", restart_policy, RESTART_POLICIES)
  resources = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
  training_resources = {**resources, **({"nvidia.com/gpu": gpus} if gpus else {})}
  volumes, mounts = [], []
  if volume_claim:
    claim, _, path = volume_claim.partition(":")
    if not claim or not path.startswith("/"):
      raise errors.ConfigError(f"--volume_claim ({volume_claim!r}) must be CLAIM:/mount/path.")
    volumes = [{"name": "model-dir", "persistentVolumeClaim": {"claimName": claim}}]
    mounts = [{"name": "model-dir", "mountPath": path}]
  program = list(command) + [f"--strategy={strategy}"]
  metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
  run_policy = {"cleanPodPolicy": "Running", "backoffLimit": backoff_limit}

  if strategy == "horovod":
    mpirun = ["mpirun", "--allow-run-as-root", "-np", str(num_workers), "--hostfile",
              MPI_HOSTFILE, "-bind-to", "none", "-map-by", "slot", "-x", "PATH",
              "-x", "LD_LIBRARY_PATH", "-x", "PYTHONPATH", *program]
    launcher = _container(MPI_CONTAINER, image, mpirun, resources, mounts)
    worker = _container(MPI_CONTAINER, image, ["sleep", "infinity"], training_resources, mounts)
    return {"apiVersion": API_VERSION, "kind": "MPIJob", "metadata": metadata, "spec": {
        "slotsPerWorker": 1, "runPolicy": run_policy, "mpiReplicaSpecs": {
            "Launcher": _replica(1, restart_policy, launcher, volumes),
            "Worker": _replica(num_workers, restart_policy, worker, volumes)}}}

  one_pod = strategy in ("local", "mirrored")
  counts = [("Chief", 1), ("Worker", 0 if one_pod else num_workers - 1), ("PS", num_ps),
            ("Evaluator", int(evaluator))]
  specs = {}
  for role, replicas in counts:
    if replicas:
      trains = role in ("Chief", "Worker")
      container = _container(TF_CONTAINER, image, program,
                             training_resources if trains else resources, mounts, port)
      specs[role] = _replica(replicas, restart_policy, container, volumes)
  if strategy == "mirrored":
    specs["Chief"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": cluster_lib.NUM_DEVICES_ENV, "value": str(num_workers)}]
  return {"apiVersion": API_VERSION, "kind": "TFJob", "metadata": metadata, "spec": {
      "runPolicy": run_policy, "tfReplicaSpecs": specs}}


def network_policy(name, namespace=None):
  """A NetworkPolicy that admits only the job's pods (the operator labels them)."""
  pods = {"matchLabels": {JOB_NAME_LABEL: name}}
  return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": f"{name}-own-pods-only",
                       **({"namespace": namespace} if namespace else {})},
          "spec": {"podSelector": pods, "policyTypes": ["Ingress"],
                   "ingress": [{"from": [{"podSelector": pods}]}]}}


def main(argv):
  f = flags.FLAGS
  try:
    job = manifest(argv[1:], f.strategy, f.num_workers, f.image, f.num_ps, f.evaluator,
                   f.name, f.namespace, f.restart_policy, f.backoff_limit, f.cpu, f.memory,
                   f.gpus, f.volume_claim, f.port)
  except errors.ConfigError as e:
    sys.stderr.write(f"estimator-dist k8s: {e}\n")
    return 2
  documents = [job] + ([network_policy(f.name, f.namespace)] if f.network_policy else [])
  sys.stdout.write(yaml.safe_dump_all(documents, sort_keys=False))
  return 0


def run():
  define_flags()
  app.run(main)
