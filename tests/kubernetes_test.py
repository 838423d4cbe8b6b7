"""Kubernetes: the manifests `estimator-dist k8s` prints, checked the way the Kubeflow
training-operator checks them, and the TF_CONFIG it would write for each pod."""

import json
import re
import shlex
import subprocess

import pytest
import tensorflow as tf
import yaml

from estimator_dist import errors
from estimator_dist.contract import cluster
from estimator_dist.engines import kubernetes
from estimator_dist.strategies import checks
from estimator_dist.strategies import local
from estimator_dist.strategies import traits
from estimator_dist.supervision import local_cluster
from tests import helpers

TF_REPLICA_TYPES = ("Chief", "Master", "Worker", "PS", "Evaluator")
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")


def k8s(*args):
  job, policy = yaml.safe_load_all(kubernetes.manifest_from_args(list(args)))
  # Only the job's own pods may reach them.
  pods = {"matchLabels": {"training.kubeflow.org/job-name": job["metadata"]["name"]}}
  assert policy["kind"] == "NetworkPolicy" and policy["spec"]["podSelector"] == pods
  assert policy["spec"]["ingress"] == [{"from": [{"podSelector": pods}]}]
  assert policy["metadata"].get("namespace") == job["metadata"].get("namespace")
  return job


def check_replica_specs(specs, container_name):
  """The operator's admission checks (ValidateReplicaSpecs and the TFJob webhook)."""
  assert specs, "replica specs are required"
  for role, spec in specs.items():
    assert isinstance(spec["replicas"], int) and spec["replicas"] >= 1
    assert spec["restartPolicy"] in RESTART_POLICIES
    containers = spec["template"]["spec"]["containers"]
    assert containers and all(c["image"] for c in containers), role
    assert container_name in [c["name"] for c in containers], role


def operator_tf_config(job, replicas, role, index, port=2222):
  """TF_CONFIG as the training-operator writes it (genTFConfigJSONStr): lowercase replica
  types, one headless-service name per pod, the evaluator left out of the cluster."""
  namespace = job["metadata"].get("namespace", "default")
  name = job["metadata"]["name"]
  spec = {r.lower(): [f"{name}-{r.lower()}-{i}.{namespace}.svc:{port}" for i in range(n)]
          for r, n in replicas.items() if r != "Evaluator"}
  return json.dumps({"cluster": spec, "task": {"type": role.lower(), "index": index},
                     "environment": "cloud"})


def tfjob_pods(job):
  replicas = {r: s["replicas"] for r, s in job["spec"]["tfReplicaSpecs"].items()}
  return [(role, i, operator_tf_config(job, replicas, role, i))
          for role, n in replicas.items() for i in range(n)]


def validate_for(strategy, task):
  """The adapter's cluster checks, without starting its servers."""
  return checks.check_task(traits.of(strategy), task)


@pytest.mark.processes
def test_the_command_prints_the_manifest():
  args = ["--strategy=multi_worker", "--image=img", "--", "python", "t.py"]
  assert helpers.cli("k8s", *args) == kubernetes.manifest_from_args(args)


@pytest.mark.parametrize("strategy,args,replicas", [
    ("multi_worker", ["--num_workers=3", "--evaluator"],
     {"Chief": 1, "Worker": 2, "Evaluator": 1}),
    ("parameter_server", ["--num_workers=2", "--num_ps=2", "--evaluator"],
     {"Chief": 1, "Worker": 1, "PS": 2, "Evaluator": 1}),
    ("mirrored", ["--num_workers=4"], {"Chief": 1}),
])
def test_tfjob_is_what_the_operator_accepts(strategy, args, replicas, monkeypatch):
  job = k8s(f"--strategy={strategy}", *args, "--image=registry.local/train:1",
            "--name=mnist", "--namespace=team", "--cpu=2", "--memory=4Gi",
            "--volume_claim=runs:/shared", "--", "python", "train.py",
            "--model_dir=/shared/run")
  assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "TFJob")
  assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", job["metadata"]["name"])
  assert job["spec"]["runPolicy"]["cleanPodPolicy"] in ("None", "Running", "All")
  specs = job["spec"]["tfReplicaSpecs"]
  assert set(specs) <= set(TF_REPLICA_TYPES)
  assert sum(r in specs for r in ("Chief", "Master")) <= 1
  check_replica_specs(specs, "tensorflow")
  assert {r: s["replicas"] for r, s in specs.items()} == replicas
  for spec in specs.values():
    container = spec["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "train.py", "--model_dir=/shared/run"]
    assert {"name": "ESTIMATOR_DIST_STRATEGY", "value": strategy} in container["env"]
    assert container["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "4Gi"}
    assert container["volumeMounts"] == [{"name": "model-dir", "mountPath": "/shared"}]

  # Every pod's TF_CONFIG, as the operator writes it, is a valid task of the strategy,
  # and TensorFlow reads the cluster estimator_dist publishes as the same task.
  for role, index, text in tfjob_pods(job):
    task = cluster.parse_tf_config(text)
    validate_for(strategy, task)
    if strategy == "mirrored":
      continue
    monkeypatch.setenv("TF_CONFIG", task.tf_config())
    config = tf.estimator.RunConfig()
    assert (config.task_type, config.task_id) == (role.lower(), index)
    assert config.is_chief == (role == "Chief")
    if role != "Evaluator":
      assert config.num_worker_replicas == replicas["Chief"] + replicas.get("Worker", 0)
      assert config.num_ps_replicas == replicas.get("PS", 0)


def test_the_one_pod_of_mirrored_trains_as_one_process():
  job = k8s("--strategy=mirrored", "--num_workers=2", "--image=img", "--", "python", "t.py")
  env = job["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["env"]
  assert {"name": "ESTIMATOR_DIST_NUM_DEVICES", "value": "2"} in env
  (_, _, text), = tfjob_pods(job)
  adapter = local.LocalAdapter(task=cluster.parse_tf_config(text))
  config = adapter.run_config("/tmp/unused")
  assert config.cluster_spec.as_dict() == {} and config.is_chief


def test_horovod_is_an_mpijob():
  job = k8s("--strategy=horovod", "--num_workers=4", "--image=img", "--gpus=1", "--",
            "python", "train.py")
  assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "MPIJob")
  specs = job["spec"]["mpiReplicaSpecs"]
  check_replica_specs(specs, "mpi")
  assert {r: s["replicas"] for r, s in specs.items()} == {"Launcher": 1, "Worker": 4}
  command = specs["Launcher"]["template"]["spec"]["containers"][0]["command"]
  # The pod's SIGTERM reaches mpirun as USR1, which mpirun forwards to every rank.
  assert command[:2] == ["bash", "-c"]
  subprocess.run(["bash", "-n"], input=command[2], text=True, check=True)
  assert "    kill -USR1 \"$step_pid\" || true" in command[2].splitlines()
  mpirun = shlex.split(next(line for line in command[2].splitlines()
                            if line.startswith("mpirun")))
  assert mpirun[:7] == ["mpirun", "--allow-run-as-root", "-np", "4", "--hostfile",
                        "/etc/mpi/hostfile", "-bind-to"]
  # A rank ignores USR1 until its program catches it.
  assert mpirun[-7:] == ["bash", "-c", 'trap "" USR1; exec "$@"', "task", "python",
                         "train.py", "&"]
  for name in ("ESTIMATOR_DIST_PREEMPTION_GRACE_SECS", "ESTIMATOR_DIST_STRATEGY"):
    assert ["-x", name] in [mpirun[i:i + 2] for i in range(len(mpirun))]
  worker = specs["Worker"]["template"]["spec"]["containers"][0]
  assert worker["resources"]["limits"] == {"nvidia.com/gpu": 1}


@pytest.mark.parametrize("strategy", ["parameter_server", "horovod"])
def test_evicted_pods_get_longer_than_the_grace_and_the_evaluator_outlives_the_chief(
    strategy):
  evaluator = ["--evaluator"] if strategy == "parameter_server" else []
  job = k8s(f"--strategy={strategy}", "--num_workers=2", *evaluator, "--image=img",
            "--preemption_grace_secs=60", "--", "python", "t.py")
  specs = job["spec"].get("tfReplicaSpecs") or job["spec"]["mpiReplicaSpecs"]
  for spec in specs.values():
    pod = spec["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 75
    assert {"name": "ESTIMATOR_DIST_PREEMPTION_GRACE_SECS", "value": "60"} in (
        pod["containers"][0]["env"])
  # The operator's default, Running, would remove the evaluator as the chief ends.
  assert job["spec"]["runPolicy"]["cleanPodPolicy"] == (
      "None" if strategy == "parameter_server" else "Running")
  if strategy == "horovod":  # Without a grace, mpirun runs as it is.
    job = k8s("--strategy=horovod", "--image=img", "--preemption_grace_secs=0", "--", "t")
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert launcher["containers"][0]["command"][0] == "mpirun"


@pytest.mark.parametrize("kwargs,message", [
    ({"image": None}, "--image is required: the container image that holds the program and "
                      "estimator_dist."),
    ({"image": "i", "name": "My_Job"}, "--name ('My_Job') must be a DNS label: lowercase "
     "letters, digits and '-', starting with a letter, at most 63 characters."),
    ({"image": "i", "volume_claim": "runs"}, "--volume_claim ('runs') must be CLAIM:/mount/path."),
])
def test_bad_manifest_options(kwargs, message):
  with pytest.raises(errors.ConfigError) as e:
    kubernetes.KubernetesOptions(**kwargs)
  assert str(e.value) == message


@pytest.mark.parametrize("role,index,rank", [
    ("Master", 0, 0), ("Worker", 1, 2), ("PS", 0, -1), ("Evaluator", 0, -1)])
def test_legacy_master_and_the_evaluator_outside_the_cluster(role, index, rank):
  job = {"metadata": {"name": "mnist", "namespace": "team"}}
  replicas = {"Master": 1, "Worker": 2, "PS": 1, "Evaluator": 1}
  task = cluster.parse_tf_config(operator_tf_config(job, replicas, role, index))
  assert (task.role, task.rank, task.size) == (
      {"Master": "chief"}.get(role, role.lower()), rank, 3)
  assert task.cluster["chief"] == ("mnist-master-0.team.svc:2222",)
  assert "evaluator" not in task.cluster
  validate_for("parameter_server", task)
  # TensorFlow is given the same cluster with 'chief' for the legacy 'master'.
  assert json.loads(task.tf_config())["cluster"]["chief"] == ["mnist-master-0.team.svc:2222"]


PREMADE = ("-m", "tests.programs.upstream.premade_estimator")


def test_a_program_that_does_not_import_the_toolkit_is_instrumented_in_each_pod(tmp_path):
  shared = ["--image=img", f"--volume_claim=runs:{tmp_path}"]
  job = k8s("--strategy=multi_worker", "--num_workers=2", *shared,
            f"--model_dir={tmp_path}/run", "--", "python", *PREMADE)
  for spec in job["spec"]["tfReplicaSpecs"].values():
    container = spec["template"]["spec"]["containers"][0]
    # In each pod: the program found as the image sees it, its mailbox new with this
    # manifest in the model_dir on the shared volume, no pod restarted alone.
    assert container["command"] == ["python", "-m", "estimator_dist.instrument.in_container",
                                     "--", "python", *PREMADE]
    mailbox = {e["name"]: e["value"] for e in container["env"]}["ESTIMATOR_DIST_MAILBOX"]
    assert mailbox.startswith(f"{tmp_path}/run/estimator_dist/mailbox-k8s-estimator-dist-")
    assert spec["restartPolicy"] == "Never"
  # A second manifest has a mailbox of its own; a site's tools get no YAML anchors.
  again = kubernetes.manifest_from_args(["--strategy=multi_worker", *shared,
                                         f"--model_dir={tmp_path}/run", "--", "python",
                                         *PREMADE])
  assert mailbox not in again and "&id" not in again and "*id" not in again
  # Off, or a program of ours, runs as it is.
  for args in (["--instrument=off", "--", "python", *PREMADE],
               ["--", "python", "-m", "tests.programs.plain_model"]):
    job = k8s("--strategy=multi_worker", "--image=img", *args)
    container = job["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]
    assert container["command"] == args[args.index("--") + 1:]
  for args in (["--image=img"], [*shared, "--model_dir=/elsewhere"]):
    with pytest.raises(errors.ConfigError, match="agree through the job's model_dir, which "
                       "must be on the volume every pod mounts"):
      k8s("--strategy=multi_worker", *args, "--", "python", *PREMADE)


@pytest.mark.processes
def test_the_pods_of_an_unmodified_program_train_together(tmp_path):
  """The TFJob's pods as processes here, each with its container's command and variables
  and the TF_CONFIG the operator writes (on ports of this machine): TensorFlow's premade
  tutorial, unmodified, trains as one job; the manifest applied again is refused."""
  job = k8s("--strategy=multi_worker", "--num_workers=2", "--image=img",
            f"--volume_claim=runs:{tmp_path}", f"--model_dir={tmp_path}/run", "--",
            helpers.PYTHON, *PREMADE)
  ports = iter(local_cluster.free_ports(2))
  cluster_spec = {"chief": [f"127.0.0.1:{next(ports)}"], "worker": [f"127.0.0.1:{next(ports)}"]}

  def pod(role):
    container = job["spec"]["tfReplicaSpecs"][role]["template"]["spec"]["containers"][0]
    env = helpers.child_env(**{e["name"]: e["value"] for e in container["env"]},
                            TF_CONFIG=cluster.tf_config(cluster_spec, role.lower(), 0))
    return subprocess.Popen(container["command"], stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.STDOUT, env=env, cwd=helpers.REPO,
                            start_new_session=True)
  pods = [pod("Chief"), pod("Worker")]
  try:
    outputs = [p.communicate(timeout=300)[0] for p in pods]
  finally:
    for p in pods:
      helpers.stop(p)
  assert [p.returncode for p in pods] == [0, 0], "\n".join(outputs)[-5000:]
  helpers.check_premade_trained_together("\n".join(outputs))
  assert (tmp_path / "run" / "model.ckpt-5000.index").exists()
  # The same manifest applied again would meet the rounds of this run: refused at once.
  again = pod("Chief")
  output = again.communicate(timeout=60)[0]
  assert again.returncode == 2, output
  assert "chief:0 started before with the job's mailbox" in output, output
