"""The pods of a Kubernetes job (`estimator-dist k8s`): their containers, resources, volumes
and grace, and the site's pod template (--pod_template) laid under each.

Every pod gets a memory-backed /dev/shm (a container runtime's default is 64 MB, too
little for TensorFlow's and MPI's shared memory), the shared model_dir's volume when one
is given, and a termination grace above the preemption grace. The site's PodTemplateSpec
(nodeSelector, tolerations, affinity, serviceAccountName, imagePullSecrets, volumes, env,
securityContext, labels, ...) is merged under the job's own fields: maps key by key,
lists of named items by name, other lists joined; a field both set differently is
refused, never overridden without a word.
"""

import yaml

from estimator_dist import errors
from estimator_dist.contract import task_env

TERMINATION_MARGIN_SECS = 15  # Past the grace: the kubelet's SIGKILL comes after this too.
SHM_VOLUME = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
SHM_MOUNT = {"name": "dshm", "mountPath": "/dev/shm"}
# The MPI launcher pod runs mpirun and nothing of the training.
LAUNCHER_RESOURCES = {"cpu": "500m", "memory": "512Mi"}


def resources(options, *, trains):
  """The requests and limits of a pod of the job: --cpu and --memory for every role,
  --gpus for the training pods."""
  found = {k: v for k, v in (("cpu", options.cpu), ("memory", options.memory)) if v}
  if trains and options.gpus:
    found["nvidia.com/gpu"] = options.gpus
  return found


def container(name, *, image, command, env, resources_=None, port=None, mounts=()):
  """One container: `env` a list of the Kubernetes form (task_env.kubernetes_env), `port`
  (name, number) or None."""
  found = {"name": name, "image": image}
  if command is not None:
    found["command"] = list(command)
  found["env"] = env
  if port:
    found["ports"] = [{"name": port[0], "containerPort": port[1]}]
  if resources_:
    found["resources"] = {"requests": dict(resources_), "limits": dict(resources_)}
  found["volumeMounts"] = [SHM_MOUNT, *mounts]
  return found


def template(options, the_container, *, restart_policy, site=None):
  """The PodTemplateSpec of the pods that run `the_container`, `site`'s fields under it."""
  volumes, grace = [SHM_VOLUME], options.preemption_grace_secs
  claim, _ = options.claim_and_mount
  if claim:
    volumes.append({"name": "model-dir", "persistentVolumeClaim": {"claimName": claim}})
  ours = {"spec": {"restartPolicy": restart_policy,
                   "terminationGracePeriodSeconds": (task_env.whole_seconds(grace) +
                                                     TERMINATION_MARGIN_SECS),
                   "containers": [the_container], "volumes": volumes}}
  if not site:
    return ours
  found = merged(site, ours, "")
  for container in found["spec"].get("containers") or []:
    paths = [mount.get("mountPath") for mount in container.get("volumeMounts") or []]
    twice = sorted({path for path in paths if paths.count(path) > 1})
    if twice:
      raise errors.ConfigError(
          f"--pod_template mounts {', '.join(twice)} in the container {container['name']}, "
          f"where the job mounts a volume of its own: leave it out of the template.")
  return found


def model_dir_mounts(options):
  _, mount = options.claim_and_mount
  return [{"name": "model-dir", "mountPath": mount}] if mount else []


def read_template(path):
  """The PodTemplateSpec in the YAML file `path` (a PodTemplate's `template`, or the spec
  itself); a ConfigError where it is not one."""
  try:
    with open(path) as f:
      found = yaml.safe_load(f)
  except (OSError, yaml.YAMLError) as e:
    raise errors.ConfigError(f"--pod_template={path} cannot be read: {e}") from None
  if isinstance(found, dict) and found.get("kind") == "PodTemplate":
    found = found.get("template")
  if not isinstance(found, dict) or not found or set(found) - {"metadata", "spec"}:
    raise errors.ConfigError(
        f"--pod_template={path} is not a PodTemplateSpec: a YAML mapping of `metadata` "
        f"(labels, annotations) and `spec` (a pod's spec), or a PodTemplate.")
  return found


def merged(theirs, ours, path):
  """`ours` laid over `theirs` (see the module's docstring); `path` names the field."""
  if theirs is None:  # A key the site left empty.
    return ours
  if path.rsplit(".", 1)[-1].startswith("env[") and theirs != ours:  # value or valueFrom.
    raise errors.ConfigError(f"--pod_template sets {path.lstrip('.')}, a variable the job "
                             f"sets itself: leave it out of the template.")
  if isinstance(theirs, dict) and isinstance(ours, dict):
    out = dict(theirs)
    for key, value in ours.items():
      out[key] = merged(theirs[key], value, f"{path}.{key}") if key in theirs else value
    return out
  if (isinstance(theirs, list) and isinstance(ours, list) and
      all(isinstance(item, dict) for item in theirs + ours)):
    return _joined(theirs, ours, path)
  if theirs != ours:
    raise errors.ConfigError(
        f"--pod_template sets {path.lstrip('.')} to {theirs!r}, which the job sets itself "
        f"(to {ours!r}): leave it out of the template.")
  return ours


def _joined(theirs, ours, path):
  """Lists of items: those named alike merged, the job's first (a variable of the site's
  may refer to one of the job's, `$(NAME)`), the site's other items after them."""
  by_name = {item["name"]: item for item in theirs if "name" in item}
  ours_named = {item["name"] for item in ours if "name" in item}
  out = [merged(by_name[item["name"]], item, f"{path}[{item['name']}]")
         if item.get("name") in by_name else item for item in ours]
  return out + [item for item in theirs if item.get("name") not in ours_named]
