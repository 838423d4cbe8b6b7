"""Kubernetes: the manifests `estimator-dist k8s` prints, each validated against its kind's
upstream schema (tests/k8s_schemas: the CRD's, the pod template's included), and the
TF_CONFIG each pod reads, as its controller or the downward API gives it."""

import json
import re
import shlex
import signal
import subprocess

import pytest
import tensorflow as tf
import yaml

from estimator_dist import errors
from estimator_dist.contract import cluster
from estimator_dist.contract import mailbox as mailbox_lib
from estimator_dist.engines import kubernetes
from estimator_dist.instrument import in_container
from estimator_dist.strategies import checks
from estimator_dist.strategies import local
from estimator_dist.strategies import traits
from estimator_dist.supervision import local_cluster
from estimator_dist.supervision import signal_forwarding
from tests import helpers
from tests import k8s_schemas

SHM = {"name": "dshm", "mountPath": "/dev/shm"}
PREMADE = ("-m", "tests.programs.upstream.premade_estimator")


def k8s(*args):
  """The job's manifest, validated against its schema; its NetworkPolicy admits only the
  pods its controller labels as the job's."""
  text = kubernetes.manifest_from_args(list(args))
  assert "&id" not in text and "*id" not in text  # No anchors: some sites refuse them.
  job, policy = yaml.safe_load_all(text)
  k8s_schemas.validate(job)
  label = ("jobset.sigs.k8s.io/jobset-name" if job["kind"] == "JobSet" else
           "training.kubeflow.org/job-name")
  pods = {"matchLabels": {label: job["metadata"]["name"]}}
  assert policy["kind"] == "NetworkPolicy" and policy["spec"]["podSelector"] == pods
  assert policy["spec"]["ingress"] == [{"from": [{"podSelector": pods}]}]
  assert policy["metadata"].get("namespace") == job["metadata"].get("namespace")
  return job


def containers(job):
  """{role: its pods' first container}."""
  return {role: pod["spec"]["containers"][0]
          for role, pod in k8s_schemas.pod_templates(job).items()}


def pod_env(container, annotations):
  """The container's variables as the kubelet gives them: the downward API's from the
  pod's `annotations`, then `$(NAME)` expanded from the variables before it."""
  env = {}
  for item in container["env"]:
    if "valueFrom" in item:
      key = re.fullmatch(r"metadata\.annotations\['(.+)'\]",
                         item["valueFrom"]["fieldRef"]["fieldPath"]).group(1)
      env[item["name"]] = annotations[key]
    else:
      env[item["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], item["value"])
  return env


def jobset_pods(job, uid="1234", restart="0"):
  """(role, index, variables) of every pod of a JobSet."""
  for replicated in job["spec"]["replicatedJobs"]:
    for index in range(replicated["template"]["spec"]["completions"]):
      annotations = {"batch.kubernetes.io/job-completion-index": str(index),
                     "jobset.sigs.k8s.io/jobset-uid": uid,
                     "jobset.sigs.k8s.io/restart-attempt": restart}
      container = replicated["template"]["spec"]["template"]["spec"]["containers"][0]
      yield replicated["name"], index, pod_env(container, annotations)


def operator_tf_config(job, replicas, role, index, port=2222):
  """TF_CONFIG as Training Operator v1 writes it (genTFConfigJSONStr): lowercase replica
  types, one headless-service name per pod, the evaluator left out of the cluster."""
  namespace = job["metadata"].get("namespace", "default")
  name = job["metadata"]["name"]
  spec = {r.lower(): [f"{name}-{r.lower()}-{i}.{namespace}.svc:{port}" for i in range(n)]
          for r, n in replicas.items() if r != "Evaluator"}
  return json.dumps({"cluster": spec, "task": {"type": role.lower(), "index": index},
                     "environment": "cloud"})


def check_task(strategy, text, role, index, replicas, monkeypatch):
  """A pod's TF_CONFIG `text` is a valid task of the strategy, and TensorFlow reads the
  cluster estimator_dist publishes as the same task."""
  task = cluster.parse_tf_config(text)
  checks.check_task(traits.of(strategy), task)
  monkeypatch.setenv("TF_CONFIG", task.tf_config())
  config = tf.estimator.RunConfig()
  assert (config.task_type, config.task_id) == (role, index)
  assert config.is_chief == (role == "chief")
  if role != "evaluator":
    assert config.num_worker_replicas == replicas["chief"] + replicas.get("worker", 0)
    assert config.num_ps_replicas == replicas.get("ps", 0)


@pytest.mark.processes
def test_the_command_prints_the_manifest():
  args = ["--strategy=multi_worker", "--image=img", "--", "python", "t.py"]
  assert helpers.cli("k8s", *args) == kubernetes.manifest_from_args(args)


SITE = {"metadata": {"labels": {"team": "vision"}},
        "spec": {"nodeSelector": {"pool": "train"}, "serviceAccountName": "trainer",
                 "tolerations": [{"key": "gpu", "operator": "Exists"}],
                 "imagePullSecrets": [{"name": "registry"}],
                 "securityContext": {"runAsNonRoot": True},
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}],
                 "containers": [{"name": "tensorflow", "env": [
                     {"name": "HTTP_PROXY", "value": "http://proxy:3128"}],
                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}


@pytest.mark.parametrize("strategy,args,replicas", [
    ("multi_worker", ["--num_workers=3", "--evaluator"],
     {"chief": 1, "worker": 2, "evaluator": 1}),
    ("parameter_server", ["--num_workers=2", "--num_ps=2", "--evaluator"],
     {"chief": 1, "worker": 1, "ps": 2, "evaluator": 1}),
    ("mirrored", ["--num_workers=4"], {"chief": 1}),
])
def test_a_jobset_runs_each_role_as_an_indexed_job(strategy, args, replicas, monkeypatch,
                                                   tmp_path):
  template = tmp_path / "pod.yaml"
  template.write_text(yaml.safe_dump(SITE))
  job = k8s(f"--strategy={strategy}", *args, "--image=registry.local/train:1",
            "--name=mnist", "--namespace=team", "--cpu=2", "--memory=4Gi", "--queue=research",
            "--volume_claim=runs:/shared", f"--pod_template={template}", "--", "python",
            "train.py", "--model_dir=/shared/run")
  assert (job["apiVersion"], job["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
  assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "research"}
  spec = job["spec"]
  assert spec["network"]["enableDNSHostnames"]
  # A failed pod starts every pod again (the whole job), a preemption without counting.
  assert spec["failurePolicy"] == {"maxRestarts": 3, "rules": [{
      "name": "preempted", "action": "RestartJobSetAndIgnoreMaxRestarts",
      "onJobFailureReasons": ["PodFailurePolicy"]}]}
  assert {j["name"]: j["template"]["spec"]["completions"] for j in spec["replicatedJobs"]
          } == replicas
  for replicated in spec["replicatedJobs"]:
    job_spec = replicated["template"]["spec"]
    assert (job_spec["completionMode"], job_spec["backoffLimit"]) == ("Indexed", 0)
    assert job_spec["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [200]
    pod = job_spec["template"]
    assert pod["spec"]["restartPolicy"] == "Never"
    # The site's template, under the job's own fields.
    assert pod["metadata"] == {"labels": {"team": "vision"}}
    for key in ("nodeSelector", "serviceAccountName", "tolerations", "imagePullSecrets",
                "securityContext"):
      assert pod["spec"][key] == SITE["spec"][key], key
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["dshm", "model-dir", "data"]
    container, = pod["spec"]["containers"]
    assert container["command"] == ["python", "train.py", "--model_dir=/shared/run"]
    assert [e["name"] for e in container["env"]][-1] == "HTTP_PROXY"
    assert container["volumeMounts"] == [SHM, {"name": "model-dir", "mountPath": "/shared"},
                                         {"name": "data", "mountPath": "/data"}]
    # Every role asks for its resources (a ps too); only training pods get GPUs.
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "4Gi"}
  for role, index, env in jobset_pods(job):
    assert env["ESTIMATOR_DIST_STRATEGY"] == strategy
    if strategy == "mirrored":  # One process: no cluster.
      assert "TF_CONFIG" not in env and env["ESTIMATOR_DIST_NUM_DEVICES"] == "4"
      continue
    assert json.loads(env["TF_CONFIG"])["cluster"]["chief"] == ["mnist-chief-0-0.mnist:2222"]
    check_task(strategy, env["TF_CONFIG"], role, index, replicas, monkeypatch)


def test_the_pod_template_cannot_change_what_the_job_sets(tmp_path):
  template = tmp_path / "pod.yaml"
  for site, field in (
      ({"spec": {"restartPolicy": "Always"}}, "sets spec.restartPolicy to 'Always'"),
      ({"spec": {"containers": [{"name": "tensorflow", "command": ["sh"]}]}},
       r"sets spec.containers\[tensorflow\].command to \['sh'\]"),
      ({"spec": {"containers": [{"name": "tensorflow", "env": [
          {"name": "ESTIMATOR_DIST_STRATEGY", "valueFrom": {"fieldRef": {
              "fieldPath": "metadata.name"}}}]}]}},
       r"sets spec.containers\[tensorflow\].env\[ESTIMATOR_DIST_STRATEGY\], a variable"),
      ({"spec": {"containers": [{"name": "tensorflow", "volumeMounts": [
          {"name": "big", "mountPath": "/dev/shm"}]}]}},
       "mounts /dev/shm in the container tensorflow, where")):
    template.write_text(yaml.safe_dump(site))
    with pytest.raises(errors.ConfigError, match=f"--pod_template {field}.* the job"):
      k8s("--strategy=multi_worker", "--image=img", f"--pod_template={template}", "--",
          "python", "t.py")
  template.write_text("containers: []\n")
  with pytest.raises(errors.ConfigError, match="is not a PodTemplateSpec"):
    k8s("--strategy=multi_worker", "--image=img", f"--pod_template={template}", "--", "t")
  with pytest.raises(errors.ConfigError, match="Kueue admits a job by its pods' requests"):
    k8s("--strategy=multi_worker", "--image=img", "--queue=q", "--", "t")
  # Once taken without a word, and the JobSet restarted every pod all the same.
  with pytest.raises(errors.ConfigError, match="--restart_policy=Never has no place in a JobSet"):
    k8s("--strategy=multi_worker", "--image=img", "--restart_policy=Never", "--", "t")
  for strategy in ("horovod", "multi_worker --kubeflow_v1"):
    job = k8s(*f"--strategy={strategy} --image=img --restart_policy=Never -- t".split())
    assert {spec["restartPolicy"] for spec in (
        job["spec"].get("mpiReplicaSpecs") or job["spec"]["tfReplicaSpecs"]).values()} == {"Never"}


@pytest.mark.parametrize("strategy,args,replicas", [
    ("multi_worker", ["--num_workers=3", "--evaluator"],
     {"chief": 1, "worker": 2, "evaluator": 1}),
    ("parameter_server", ["--num_workers=2", "--num_ps=2", "--evaluator"],
     {"chief": 1, "worker": 1, "ps": 2, "evaluator": 1}),
])
def test_kubeflow_v1_is_a_tfjob_the_operator_accepts(strategy, args, replicas, monkeypatch,
                                                     tmp_path):
  template = tmp_path / "pod.yaml"
  template.write_text(yaml.safe_dump({"kind": "PodTemplate", "template": SITE}))
  job = k8s(f"--strategy={strategy}", *args, "--kubeflow_v1", "--image=img", "--name=mnist",
            "--namespace=team", "--cpu=2", f"--pod_template={template}", "--", "python",
            "train.py")
  assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "TFJob")
  # The evaluator outlives the chief for its final evaluation.
  assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "backoffLimit": 3}
  specs = job["spec"]["tfReplicaSpecs"]
  assert {r.lower(): s["replicas"] for r, s in specs.items()} == replicas
  for role, container in containers(job).items():
    assert specs[role]["restartPolicy"] == "OnFailure"
    assert container["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    assert container["resources"]["limits"] == {"cpu": "2"}
    assert container["volumeMounts"] == [SHM, {"name": "data", "mountPath": "/data"}]
    assert specs[role]["template"]["spec"]["nodeSelector"] == {"pool": "train"}
  for role, count in specs.items():
    for index in range(count["replicas"]):
      text = operator_tf_config(job, {r: s["replicas"] for r, s in specs.items()}, role,
                                index)
      check_task(strategy, text, role.lower(), index, replicas, monkeypatch)


def test_the_one_pod_of_mirrored_trains_as_one_process():
  job = k8s("--strategy=mirrored", "--num_workers=2", "--kubeflow_v1", "--image=img", "--",
            "python", "t.py")
  assert {"name": "ESTIMATOR_DIST_NUM_DEVICES", "value": "2"} in containers(job)["Chief"]["env"]
  text = operator_tf_config(job, {"Chief": 1}, "Chief", 0)
  adapter = local.LocalAdapter(task=cluster.parse_tf_config(text))
  config = adapter.run_config("/tmp/unused")
  assert config.cluster_spec.as_dict() == {} and config.is_chief


@pytest.mark.parametrize("version", ["v2beta1", "v1"])
def test_horovod_is_an_mpijob(version, tmp_path):
  v1 = ["--kubeflow_v1"] if version == "v1" else []
  template = tmp_path / "pod.yaml"  # The site's fields go to the container named mpi.
  template.write_text(yaml.safe_dump({**SITE, "spec": {**SITE["spec"], "containers": [
      {**SITE["spec"]["containers"][0], "name": "mpi"}]}}))
  job = k8s("--strategy=horovod", "--num_workers=4", *v1, "--image=img", "--gpus=1",
            "--cpu=8", f"--pod_template={template}", "--", "python", "train.py")
  assert (job["apiVersion"], job["kind"]) == (f"kubeflow.org/{version}", "MPIJob")
  specs = job["spec"]["mpiReplicaSpecs"]
  assert {r: s["replicas"] for r, s in specs.items()} == {"Launcher": 1, "Worker": 4}
  pods = containers(job)
  command = pods["Launcher"]["command"]
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
  # The launcher pod runs mpirun alone: it asks for little, the workers for what they train on.
  assert pods["Launcher"]["resources"]["limits"] == {"cpu": "500m", "memory": "512Mi"}
  assert pods["Worker"]["resources"]["limits"] == {"cpu": "8", "nvidia.com/gpu": 1}
  for pod in pods.values():
    assert pod["env"][-1] == {"name": "HTTP_PROXY", "value": "http://proxy:3128"}
  # v2beta1's workers run the image's sshd; v1's operator execs the ranks into them.
  assert pods["Worker"].get("command") == (None if version == "v2beta1" else
                                           ["sleep", "infinity"])


@pytest.mark.parametrize("strategy", ["parameter_server", "horovod"])
def test_evicted_pods_get_longer_than_the_grace(strategy):
  evaluator = ["--evaluator"] if strategy == "parameter_server" else []
  job = k8s(f"--strategy={strategy}", "--num_workers=2", *evaluator, "--image=img",
            "--preemption_grace_secs=60", "--", "python", "t.py")
  for pod in k8s_schemas.pod_templates(job).values():
    assert pod["spec"]["terminationGracePeriodSeconds"] == 75
    assert {"name": "ESTIMATOR_DIST_PREEMPTION_GRACE_SECS", "value": "60"} in (
        pod["spec"]["containers"][0]["env"])
  if strategy == "horovod":  # Without a grace, mpirun runs as it is.
    job = k8s("--strategy=horovod", "--image=img", "--preemption_grace_secs=0", "--", "t")
    assert containers(job)["Launcher"]["command"][0] == "mpirun"


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
  checks.check_task(traits.of("parameter_server"), task)
  # TensorFlow is given the same cluster with 'chief' for the legacy 'master'.
  assert json.loads(task.tf_config())["cluster"]["chief"] == ["mnist-master-0.team.svc:2222"]


def test_a_program_that_does_not_import_the_toolkit_is_instrumented_in_each_pod(tmp_path):
  shared = ["--image=img", f"--volume_claim=runs:{tmp_path}"]
  job = k8s("--strategy=multi_worker", "--num_workers=2", *shared,
            f"--model_dir={tmp_path}/run", "--", "python", *PREMADE)
  mailboxes = set()
  for container in containers(job).values():
    # In each pod, the program found as the image sees it.
    assert container["command"] == ["python", "-m", "estimator_dist.instrument.in_container",
                                    "--", "python", *PREMADE]
  # Its mailbox: in the model_dir on the shared volume, new for each JobSet and restart.
  for uid, restart in (("a", "0"), ("a", "1"), ("b", "0")):
    found = {env["ESTIMATOR_DIST_MAILBOX"] for _, _, env in jobset_pods(job, uid, restart)}
    assert found == {f"{tmp_path}/run/estimator_dist/mailbox-k8s-{uid}-{restart}"}
    mailboxes |= found
  assert len(mailboxes) == 3
  # An MPIJob's: new for each start of its launcher pod, whose mpirun passes it on.
  job = k8s("--strategy=horovod", *shared, f"--model_dir={tmp_path}/run", "--", "python",
            *PREMADE)
  launcher = containers(job)["Launcher"]
  assert launcher["env"][0] == {"name": "ESTIMATOR_DIST_POD_UID", "valueFrom": {
      "fieldRef": {"fieldPath": "metadata.uid"}}}
  assert {"name": "ESTIMATOR_DIST_MAILBOX", "value": f"{tmp_path}/run/estimator_dist/"
          "mailbox-k8s-$(ESTIMATOR_DIST_POD_UID)"} in launcher["env"]
  assert "-x ESTIMATOR_DIST_MAILBOX" in launcher["command"][2]
  # A retried launcher is a new pod (a new uid), not the old one's container again.
  assert {s["restartPolicy"] for s in job["spec"]["mpiReplicaSpecs"].values()} == {"Never"}
  # Kubeflow v1's TFJob: new with each manifest, and no pod restarted alone.
  args = ["--kubeflow_v1", "--strategy=multi_worker", *shared, f"--model_dir={tmp_path}/run",
          "--", "python", *PREMADE]
  job = k8s(*args)
  assert {s["restartPolicy"] for s in job["spec"]["tfReplicaSpecs"].values()} == {"Never"}
  mailbox, = set(re.findall(r"mailbox-k8s-estimator-dist-\w+", yaml.safe_dump(job)))
  assert mailbox not in kubernetes.manifest_from_args(args)
  with pytest.raises(errors.ConfigError, match="--restart_policy=OnFailure: the pods of a "
                     "program they instrument"):  # Once replaced by Never without a word.
    k8s("--restart_policy=OnFailure", *args)
  # Off, or a program of ours, runs as it is.
  for args in (["--instrument=off", "--", "python", *PREMADE],
               ["--", "python", "-m", "tests.programs.plain_model"]):
    job = k8s("--strategy=multi_worker", "--image=img", *args)
    assert containers(job)["chief"]["command"] == args[args.index("--") + 1:]
  for args in (["--image=img"], [*shared, "--model_dir=/elsewhere"]):
    with pytest.raises(errors.ConfigError, match="agree through the job's model_dir, which "
                       "must be on the volume every pod mounts"):
      k8s("--strategy=multi_worker", *args, "--", "python", *PREMADE)


@pytest.mark.processes
def test_the_pods_of_an_unmodified_program_train_together(tmp_path):
  """The JobSet's pods as processes here, each with its container's command and the
  variables the kubelet gives it (its TF_CONFIG's hostnames made ports of this machine):
  TensorFlow's premade tutorial, unmodified, trains as one job; a pod started again
  with the same mailbox is refused at once."""
  job = k8s("--strategy=multi_worker", "--num_workers=2", "--image=img",
            f"--volume_claim=runs:{tmp_path}", f"--model_dir={tmp_path}/run", "--",
            helpers.PYTHON, *PREMADE)
  hosts = dict(zip(["estimator-dist-chief-0-0.estimator-dist:2222",
                    "estimator-dist-worker-0-0.estimator-dist:2222"],
                   [f"127.0.0.1:{port}" for port in local_cluster.free_ports(2)]))
  commands = containers(job)

  def pod(role, env):
    env = {**env, "TF_CONFIG": re.sub("|".join(map(re.escape, hosts)),
                                      lambda m: hosts[m.group(0)], env["TF_CONFIG"])}
    return subprocess.Popen(commands[role]["command"], stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.STDOUT, env=helpers.child_env(**env),
                            cwd=helpers.REPO, start_new_session=True)
  envs = {role: env for role, _, env in jobset_pods(job)}
  pods = [pod(role, env) for role, env in envs.items()]
  try:
    outputs = [p.communicate(timeout=300)[0] for p in pods]
  finally:
    for p in pods:
      helpers.stop(p)
  assert [p.returncode for p in pods] == [0, 0], "\n".join(outputs)[-5000:]
  helpers.check_premade_trained_together("\n".join(outputs))
  assert (tmp_path / "run" / "model.ckpt-5000.index").exists()
  again = pod("chief", envs["chief"])
  output = again.communicate(timeout=60)[0]
  assert again.returncode == 2, output
  assert "chief:0 started before with the job's mailbox" in output, output


def test_a_pod_that_cannot_find_the_program_it_instruments_is_refused(tmp_path, monkeypatch,
                                                                       capsys):
  # Run as it is, each pod would train alone: nothing on Kubernetes checks that they joined.
  monkeypatch.setenv("ESTIMATOR_DIST_MAILBOX", str(tmp_path / "mailbox"))
  monkeypatch.chdir(tmp_path)
  assert in_container.main(["in_container", "--", "python", "train.py"]) == 2
  assert (f"estimator-dist: error: the job instruments train.py, which this container cannot "
          f"find (in {tmp_path})") in capsys.readouterr().err
  assert not (tmp_path / "mailbox").exists()


@pytest.mark.processes
def test_a_programs_own_exit_code_200_is_a_failure_the_jobset_counts(tmp_path):
  # JobSet restarts a job that exited 200 without counting it (a preemption): a program's
  # own 200 restarted it for ever.
  (tmp_path / "exits.py").write_text("import sys\nsys.exit(200)\n")
  saved = mailbox_lib.Mailbox(str(tmp_path / "saved")).emptied()
  saved.post(mailbox_lib.PREEMPTION, mailbox_lib.CHIEF, {"step": 40})
  said = {}
  for mailbox, code in ((tmp_path / "own", 1), (tmp_path / "saved", 200)):
    done = subprocess.run(
        [helpers.PYTHON, "-m", in_container.__name__, "--", helpers.PYTHON, "exits.py"],
        cwd=tmp_path, env=helpers.child_env(ESTIMATOR_DIST_MAILBOX=str(mailbox)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60, check=False)
    assert done.returncode == code, done.stdout
    said[code] = done.stdout
  assert said == {1: "estimator-dist: error: exit code 200 is the program's own (no task said "
                     "the toolkit chose it, as it does on a preemption): this pod exits 1, a "
                     "failure that counts against --backoff_limit.\n",
                  200: ""}, said
  # The pod's SIGTERM (a preemption, an eviction) reaches the program, and so does USR1
  # (mpirun's forward of it), which the rank's command ignores until the program runs.
  (tmp_path / "waits.py").write_text(
      "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *_: sys.exit(7))\n"
      "signal.signal(signal.SIGUSR1, lambda *_: sys.exit(8))\n"
      "print('waiting', flush=True)\ntime.sleep(60)\n")
  pod_command = [helpers.PYTHON, "-m", in_container.__name__, "--", helpers.PYTHON, "waits.py"]
  for number, start, code in ((signal.SIGTERM, [], 7),
                              (signal.SIGUSR1, shlex.split(signal_forwarding.IGNORING_USR1), 8)):
    pod = subprocess.Popen(
        [*start, *pod_command], cwd=tmp_path, stdout=subprocess.PIPE, text=True,
        env=helpers.child_env(ESTIMATOR_DIST_MAILBOX=str(tmp_path / f"mailbox-{code}")),
        start_new_session=True)
    try:
      assert pod.stdout.readline() == "waiting\n"
      pod.send_signal(number)
      assert pod.wait(timeout=30) == code
    finally:
      helpers.stop(pod)
