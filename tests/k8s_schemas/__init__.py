"""The OpenAPI schemas of the custom resources `estimator-dist k8s` prints, as their
CustomResourceDefinitions declare them upstream (vendor.py wrote them; README.md says
from where), and `validate`, which checks a manifest against its kind's schema, pod
templates included (each CRD carries the PodTemplateSpec's schema), as the API server
does under `kubectl apply --validate=strict`: types, enums, required fields, and no
field the schema does not know (the server would drop it without a word)."""

import functools
import json
import os

import jsonschema

SCHEMAS = {("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobsets-v1alpha2.json",
           ("kubeflow.org/v2beta1", "MPIJob"): "mpijobs-v2beta1.json",
           ("kubeflow.org/v1", "MPIJob"): "mpijobs-v1.json",
           ("kubeflow.org/v1", "TFJob"): "tfjobs-v1.json"}


def _strict(schema):
  """`schema` where an object with declared properties takes no other field, unless the
  schema keeps unknown fields (x-kubernetes-preserve-unknown-fields)."""
  if isinstance(schema, list):
    return [_strict(item) for item in schema]
  if not isinstance(schema, dict):
    return schema
  found = {key: _strict(value) for key, value in schema.items()}
  if ("properties" in schema and "additionalProperties" not in schema and
      not schema.get("x-kubernetes-preserve-unknown-fields")):
    found["additionalProperties"] = False
  return found


@functools.lru_cache(maxsize=None)
def validator(api_version, kind):
  with open(os.path.join(os.path.dirname(__file__), SCHEMAS[api_version, kind])) as f:
    return jsonschema.Draft7Validator(_strict(json.load(f)))


def validate(document):
  """Raises AssertionError naming every place where `document` breaks its schema."""
  errors = sorted(validator(document["apiVersion"], document["kind"]).iter_errors(document),
                  key=lambda e: list(e.absolute_path))
  assert not errors, "\n".join(
      f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def pod_templates(document):
  """{role: PodTemplateSpec} of a JobSet, MPIJob or TFJob."""
  spec = document["spec"]
  if document["kind"] == "JobSet":
    return {job["name"]: job["template"]["spec"]["template"] for job in spec["replicatedJobs"]}
  replicas = spec.get("tfReplicaSpecs") or spec["mpiReplicaSpecs"]
  return {role: replica["template"] for role, replica in replicas.items()}
