#!/usr/bin/env python3
"""Offline JSON Schemas for kubeconform: Kubernetes core kinds and CustomResourceDefinitions.

kubeconform validates each object against one schema file, found by a path template.
- ``crd``: CRDs ship an OpenAPI v3 schema per version; this writes
  ``OUT/<group>/<kind>_<version>.json`` (kind in lower case), for
  ``-schema-location 'OUT/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json'``.
  Strict by default: every object that lists its properties refuses unknown keys, as the
  API server would prune them silently; a typo fails the check.
- ``core``: the kubernetes-validate wheel ships per-kind schemas whose ``$ref``s point at
  an absolute ``/api/_definitions.json`` kubeconform cannot resolve; this inlines them into
  standalone files ``OUT/<kind><suffix>.json``, for
  ``-schema-location 'OUT/{{ .ResourceKind }}{{ .KindSuffix }}.json'``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml


def to_jsonschema(node: Any, strict: bool = True) -> Any:
    """One OpenAPI v3 (Kubernetes structural) schema node as JSON Schema draft-07."""
    if isinstance(node, list):
        return [to_jsonschema(n, strict) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: to_jsonschema(v, strict) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
            out[key] = to_jsonschema(value, strict)
        elif key.startswith("x-kubernetes-") or key == "nullable":
            continue
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if (
        strict
        and "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def convert_crd(crd: dict[str, Any], strict: bool = True) -> dict[str, dict[str, Any]]:
    """{relative output path: schema} for every served version of one CRD."""
    if crd.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"not a CustomResourceDefinition: kind={crd.get('kind')!r}")
    spec = crd["spec"]
    group, kind = spec["group"], spec["names"]["kind"]
    schemas: dict[str, dict[str, Any]] = {}
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        openapi = version.get("schema", {}).get("openAPIV3Schema")
        if openapi is None:
            raise ValueError(f"{kind} {version['name']}: no openAPIV3Schema")
        schema = to_jsonschema(openapi, strict)
        props = schema.setdefault("properties", {})
        props["apiVersion"] = {"type": "string", "enum": [f"{group}/{version['name']}"]}
        props["kind"] = {"type": "string", "enum": [kind]}
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        schemas[f"{group}/{kind.lower()}_{version['name']}.json"] = schema
    return schemas


def convert_files(paths: Iterable[Path], out: Path, strict: bool = True) -> list[Path]:
    written = []
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not doc:
                continue
            for rel, schema in convert_crd(doc, strict).items():
                target = out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n", encoding="utf-8")
                written.append(target)
    return written


def kubernetes_validate_dir(version: str, strict: bool = True) -> Path:
    """The kubernetes-validate wheel's schema folder for a Kubernetes version like 1.33.0."""
    import kubernetes_validate  # dev dependency; imported late so `crd` works without it

    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    d = base / f"v{version.lstrip('v')}-local{'-strict' if strict else ''}"
    if not d.is_dir():
        known = sorted(p.name for p in base.iterdir() if p.is_dir())
        raise ValueError(f"kubernetes-validate has no schemas for {version}; it has {', '.join(known)}")
    return d


def standalone(schema: Any, defs: dict[str, Any], stack: tuple[str, ...] = ()) -> Any:
    """Inline every ``$ref`` to ``.../_definitions.json#/$defs/NAME``; refuses recursion."""
    if isinstance(schema, list):
        return [standalone(s, defs, stack) for s in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if ref is None:
        return {k: standalone(v, defs, stack) for k, v in schema.items()}
    name = ref.rsplit("/", 1)[-1]
    if name in stack:
        raise ValueError(f"recursive definition {name} cannot be inlined")
    if name not in defs:
        raise ValueError(f"unknown $ref {ref}")
    rest = {k: standalone(v, defs, stack) for k, v in schema.items() if k != "$ref"}
    return {**standalone(defs[name], defs, (*stack, name)), **rest}


def write_core(kinds: Iterable[str], version: str, out: Path, strict: bool = True) -> list[Path]:
    """Standalone schemas for kinds named like kubeconform's files: deployment-apps-v1, service-v1."""
    src = kubernetes_validate_dir(version, strict)
    defs = json.loads((src / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in kinds:
        f = src / f"{kind}.json"
        if not f.exists():
            raise ValueError(f"no schema {f.name} in {src}")
        schema = standalone(json.loads(f.read_text(encoding="utf-8")), defs)
        (out / f.name).write_text(json.dumps(schema), encoding="utf-8")
        written.append(out / f.name)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    crd = sub.add_parser("crd", help="CRD YAML files -> OUT/<group>/<kind>_<version>.json")
    crd.add_argument("crds", nargs="+", type=Path, help="CRD YAML files")
    core = sub.add_parser("core", help="kubernetes-validate kinds -> OUT/<kind><suffix>.json")
    core.add_argument("kinds", nargs="+", help="e.g. deployment-apps-v1 service-v1")
    core.add_argument("--kubernetes-version", default="1.33.0")
    for sp in (crd, core):
        sp.add_argument("-o", "--out", type=Path, required=True, help="output directory")
        sp.add_argument("--no-strict", action="store_true", help="allow unknown keys")
    args = p.parse_args(argv)
    try:
        if args.what == "crd":
            written = convert_files(args.crds, args.out, strict=not args.no_strict)
        else:
            written = write_core(args.kinds, args.kubernetes_version, args.out, strict=not args.no_strict)
    except (OSError, ValueError, KeyError, yaml.YAMLError) as e:
        print(f"crd_to_jsonschema: {e}", file=sys.stderr)
        return 1
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
