"""The kinds of manifest `estimator-dist k8s` prints for a job (engines/kubernetes.py).

- **JobSet** (jobset.x-k8s.io/v1alpha2), the default for the tf.distribute strategies: one
  replicated Job per role (chief, worker, ps, evaluator), each an Indexed Job of that
  many pods with stable hostnames (`<name>-<role>-0-<index>.<name>`). Each pod's
  TF_CONFIG is in the manifest, its index taken from the pod's completion index (the
  downward API), so TensorFlow and the toolkit read the pod's place as under any engine.
  A failed pod fails its Job, and the JobSet restarts every Job, up to --backoff_limit
  times; a preemption's restart does not count (the tasks saved at one agreed step and
  exited with errors.PREEMPTED_EXIT_CODE, or the pod was evicted). Every task ends by
  itself (a ps once training ended), and the JobSet succeeds when every Job did.
- **MPIJob v2beta1** (kubeflow.org/v2beta1, the MPI Operator) for horovod: a launcher pod
  runs mpirun over the worker pods, which run the image's sshd, as the MPI Operator v2
  asks (an image built FROM mpioperator/openmpi does).
- With --kubeflow_v1, Training Operator v1's **TFJob** and **MPIJob** (kubeflow.org/v1):
  the operator writes each pod's TF_CONFIG, and pods restart alone (--restart_policy).
"""

import json
import shlex

from estimator_dist import errors
from estimator_dist.contract import env_vars
from estimator_dist.engines import k8s_pods
from estimator_dist.supervision import signal_forwarding

TF_CONTAINER = "tensorflow"  # The container the TFJob operator gives TF_CONFIG to.
MPI_CONTAINER = "mpi"
MPI_HOSTFILE = "/etc/mpi/hostfile"  # Written by either MPI operator into the launcher pod.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"  # Set by JobSet on each pod.
KUBEFLOW_NAME_LABEL = "training.kubeflow.org/job-name"  # Set by Kubeflow's operators.
_INDEX = "batch.kubernetes.io/job-completion-index"
# Per pod, from its annotations: its index in its role, and (for the mailbox of an
# instrumented program) its JobSet's uid and restart: new for each JobSet and each restart.
_FROM_ANNOTATIONS = ((env_vars.KUBERNETES_POD_INDEX, _INDEX),
                     (env_vars.KUBERNETES_JOBSET_UID, "jobset.sigs.k8s.io/jobset-uid"),
                     (env_vars.KUBERNETES_JOBSET_RESTART, "jobset.sigs.k8s.io/restart-attempt"))
_POD_UID = {"name": env_vars.KUBERNETES_POD_UID,
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}
# A pod's name is its Job's and 5 more characters, at most 63 in all (JobSet's webhook).
_POD_NAME_SUFFIX = 6


def role_counts(job):
  """[(role, its tasks)] of a tf.distribute job, in TF_CONFIG's names."""
  return [("chief", 1), ("worker", 0 if job.traits.one_process else job.num_workers - 1),
          ("ps", job.num_ps), ("evaluator", int(job.evaluator))]


def _from_annotations():
  return [{"name": name, "valueFrom": {"fieldRef": {
      "fieldPath": f"metadata.annotations['{key}']"}}} for name, key in _FROM_ANNOTATIONS]


def jobset_mailbox(directory):
  """The mailbox of an instrumented program's pods in `directory`, new for each JobSet
  and each of its restarts (Kubernetes expands `$(NAME)` from the pod's variables)."""
  return (f"{directory}/mailbox-k8s-$({env_vars.KUBERNETES_JOBSET_UID})-"
          f"$({env_vars.KUBERNETES_JOBSET_RESTART})")


def mpijob_mailbox(directory):
  """The mailbox of an instrumented program's ranks in `directory`, new for each start of
  the launcher pod (its uid), whose mpirun passes it on to the ranks."""
  return f"{directory}/mailbox-k8s-$({env_vars.KUBERNETES_POD_UID})"


def jobset(job, *, options, program, env, site):
  """A JobSet of the tf.distribute strategy's tasks; `env` the pods' variables (a list of
  the Kubernetes form), `site` the --pod_template or None."""
  name, port = options.name, options.port
  counts = [(role, count) for role, count in role_counts(job) if count]
  hosts = {role: [f"{name}-{role}-0-{i}" for i in range(count)] for role, count in counts}
  too_long = max((h for role in hosts.values() for h in role), key=len)
  if len(too_long) + _POD_NAME_SUFFIX > 63:
    raise errors.ConfigError(
        f"--name={name} is too long: the name of the pod {too_long} and JobSet's 6 more "
        f"characters must have at most 63; give a shorter --name.")
  cluster = json.dumps({role: [f"{h}.{name}:{port}" for h in names]
                        for role, names in hosts.items() if role != "evaluator"})
  replicated = []
  for role, count in counts:
    own = [] if job.traits.one_process else [{"name": "TF_CONFIG", "value": (
        f'{{"cluster": {cluster}, "task": {{"type": "{role}", "index": '
        f'$({env_vars.KUBERNETES_POD_INDEX})}}, "environment": "cloud"}}')}]
    trains = role in ("chief", "worker")
    the_container = k8s_pods.container(
        TF_CONTAINER, image=options.image, command=program,
        env=_from_annotations() + env + own,
        resources_=k8s_pods.resources(options, trains=trains), port=("tf-port", port),
        mounts=k8s_pods.model_dir_mounts(options))
    replicated.append({"name": role, "replicas": 1, "template": {"spec": {
        "completions": count, "parallelism": count, "completionMode": "Indexed",
        "backoffLimit": 0, "podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {
                "operator": "In", "values": [errors.PREEMPTED_EXIT_CODE]}},
            {"action": "FailJob", "onPodConditions": [
                {"type": "DisruptionTarget", "status": "True"}]}]},
        "template": k8s_pods.template(options, the_container, restart_policy="Never",
                                      site=site)}}})
  return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
          "metadata": _metadata(options), "spec": {
              "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
              "failurePolicy": {"maxRestarts": options.backoff_limit, "rules": [{
                  "name": "preempted", "action": "RestartJobSetAndIgnoreMaxRestarts",
                  "onJobFailureReasons": ["PodFailurePolicy"]}]},
              "replicatedJobs": replicated}}


def mpijob(job, *, options, program, env, names, site, restart_policy, version):
  """An MPIJob (`version`: v2beta1 or v1) whose launcher pod runs mpirun over one rank per
  worker pod; `names`: the variables mpirun passes on to the ranks."""
  mpirun = ["mpirun", "--allow-run-as-root", "-np", str(job.num_workers), "--hostfile",
            MPI_HOSTFILE, "-bind-to", "none", "-map-by", "slot", "-x", "PATH",
            "-x", "LD_LIBRARY_PATH", "-x", "PYTHONPATH",
            *[part for name in names for part in ("-x", name)], *program]
  if options.preemption_grace_secs:  # The pod's SIGTERM reaches the ranks as USR1.
    step = shlex.join(mpirun[:-len(program)]) + (
        f" {signal_forwarding.IGNORING_USR1} {shlex.join(program)}")
    mpirun = ["bash", "-c", "\n".join([
        *signal_forwarding.trap("TERM"),
        *signal_forwarding.lines(step, forward='kill -USR1 "$step_pid"'), 'exit "$code"'])]
  mounts, env = k8s_pods.model_dir_mounts(options), [_POD_UID, *env]
  launcher = k8s_pods.container(MPI_CONTAINER, image=options.image, command=mpirun, env=env,
                                resources_=k8s_pods.LAUNCHER_RESOURCES, mounts=mounts)
  # v2beta1's workers run the image's sshd; v1's operator runs the ranks through kubectl.
  worker = k8s_pods.container(
      MPI_CONTAINER, image=options.image,
      command=None if version == "v2beta1" else ["sleep", "infinity"], env=env,
      resources_=k8s_pods.resources(options, trains=True), mounts=mounts)

  def replica(replicas, the_container):
    return {"replicas": replicas, "restartPolicy": restart_policy,
            "template": k8s_pods.template(options, the_container,
                                          restart_policy=restart_policy, site=site)}
  spec = {"slotsPerWorker": 1, "runPolicy": {"cleanPodPolicy": "Running",
                                             "backoffLimit": options.backoff_limit}}
  if version == "v2beta1":
    spec["mpiImplementation"] = "OpenMPI"
  spec["mpiReplicaSpecs"] = {"Launcher": replica(1, launcher),
                             "Worker": replica(job.num_workers, worker)}
  return {"apiVersion": f"kubeflow.org/{version}", "kind": "MPIJob",
          "metadata": _metadata(options), "spec": spec}


def tfjob_v1(job, *, options, program, env, site, restart_policy):
  """Training Operator v1's TFJob: the operator starts one pod per replica and a headless
  service per pod, and writes each pod's TF_CONFIG. It keeps its pods when the chief ends
  (cleanPodPolicy None): the evaluator finishes its final evaluation, and ps tasks exit
  once every training task has ended."""
  specs = {}
  for role, replicas in role_counts(job):
    role = {"ps": "PS"}.get(role, role.capitalize())
    if replicas:
      the_container = k8s_pods.container(
          TF_CONTAINER, image=options.image, command=program, env=env,
          resources_=k8s_pods.resources(options, trains=role in ("Chief", "Worker")),
          port=("tfjob-port", options.port), mounts=k8s_pods.model_dir_mounts(options))
      specs[role] = {"replicas": replicas, "restartPolicy": restart_policy,
                     "template": k8s_pods.template(options, the_container,
                                                   restart_policy=restart_policy, site=site)}
  # The operator's default (Running) removes the evaluator as the chief ends, before its
  # final evaluation (kubeflow/trainer#1658); every task here ends by itself.
  return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": _metadata(options),
          "spec": {"runPolicy": {"cleanPodPolicy": "None",
                                 "backoffLimit": options.backoff_limit},
                   "tfReplicaSpecs": specs}}


def _metadata(options):
  metadata = {"name": options.name}
  if options.namespace:
    metadata["namespace"] = options.namespace
  if options.queue:
    metadata["labels"] = {"kueue.x-k8s.io/queue-name": options.queue}
  return metadata
