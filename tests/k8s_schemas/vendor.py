"""Writes one version's OpenAPI schema of a CustomResourceDefinition, without its
descriptions (they do not validate), as tests/k8s_schemas/<plural>-<version>.json, with
where it came from in its "$comment":

  python -m tests.k8s_schemas.vendor CRD.yaml VERSION "owner/repo path at tag (commit)"

The schemas here, and the commands that wrote them, are listed in README.md.
"""

import json
import os
import sys

import yaml


def without_descriptions(schema):
  if isinstance(schema, dict):
    return {k: without_descriptions(v) for k, v in schema.items() if k != "description"}
  if isinstance(schema, list):
    return [without_descriptions(v) for v in schema]
  return schema


def main(crd_path, version, source):
  with open(crd_path) as f:
    crd = next(d for d in yaml.safe_load_all(f)
               if d and d.get("kind") == "CustomResourceDefinition")
  served, = [v for v in crd["spec"]["versions"] if v["name"] == version]
  schema = {"$comment": f"{crd['metadata']['name']} {version}, from {source}",
            **without_descriptions(served["schema"]["openAPIV3Schema"])}
  path = os.path.join(os.path.dirname(__file__),
                      f"{crd['spec']['names']['plural']}-{version}.json")
  with open(path, "w") as f:
    json.dump(schema, f, indent=None, separators=(",", ":"), sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  main(*sys.argv[1:])
