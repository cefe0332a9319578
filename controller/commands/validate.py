"""`lavalog validate FILE...`: check Volcano Job manifests before submitting them.

Each document of each file goes through the same admission the controller applies, so
a manifest that passes here is one the controller will run. With `-o yaml|json` the
accepted jobs are printed with Volcano's defaults filled in (what the controller will
actually run) and the verdicts move to stderr, so the output can be piped on.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import msgspec
import yaml

from controller.admission import Admitted, admit_job
from events.volcano import API_VERSION, KIND, FieldError

HELP = "check Volcano Job manifests with Volcano's admission rules and show their defaults"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML (multi-document) or JSON")
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "yaml", "json"),
        default="text",
        help="text: a verdict per job; yaml/json: the accepted jobs with defaults applied",
    )


def run(args: argparse.Namespace) -> int:
    report = sys.stdout if args.output == "text" else sys.stderr
    accepted: list[dict[str, Any]] = []
    failed = False
    for file in args.files:
        try:
            documents = _load(Path(file))
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            print(f"{file}: cannot be read: {exc}", file=report)
            failed = True
            continue
        for number, document in enumerate(documents, start=1):
            label = f"{file}#{number}" if len(documents) > 1 else file
            job, errors = _admit(document)
            failed |= bool(errors)
            _print_verdict(label, document, errors, report)
            if job is not None:
                accepted.append(job)
    if args.output == "yaml":
        sys.stdout.write(yaml.safe_dump_all(accepted, sort_keys=False))
    elif args.output == "json":
        items = {"apiVersion": "v1", "kind": "List", "items": accepted}
        sys.stdout.write(json.dumps(items, indent=2) + "\n")
    return 1 if failed else 0


def _load(path: Path) -> list[object]:
    """The non-empty documents of a file: JSON if it is named so, else (multi-document) YAML."""
    text = path.read_text(encoding="utf-8")
    documents = [json.loads(text)] if path.suffix == ".json" else yaml.safe_load_all(text)
    return [document for document in documents if document is not None]


def _admit(document: object) -> tuple[dict[str, Any] | None, list[FieldError]]:
    """The job with its defaulted spec, or every reason it is not a valid Volcano Job."""
    if not isinstance(document, Mapping):
        return None, [FieldError("(document)", "must be a Job object (a mapping)")]
    errors = [
        FieldError(field, f"must be {expected!r}, not {document.get(field)!r}")
        for field, expected in (("apiVersion", API_VERSION), ("kind", KIND))
        if document.get(field) != expected
    ]
    spec = document.get("spec")
    if not isinstance(spec, Mapping):
        return None, [*errors, FieldError("spec", "required: the job's tasks and policies")]
    result = admit_job(spec)
    if not isinstance(result, Admitted):
        return None, [*errors, *result.errors]
    if errors:
        return None, errors
    return {**document, "spec": msgspec.to_builtins(result.spec)}, []


def _print_verdict(label: str, document: object, errors: list[FieldError], out: TextIO) -> None:
    name = _job_name(document)
    where = f"{label}: {name}" if name else label
    if not errors:
        print(f"{where}: ok", file=out)
        return
    print(f"{where}: {len(errors)} error{'s' if len(errors) > 1 else ''}", file=out)
    for error in errors:
        print(f"  {error}", file=out)


def _job_name(document: object) -> str:
    """`job/namespace/name` as the manifest gives it, or "" if it has no name."""
    metadata = document.get("metadata") if isinstance(document, Mapping) else None
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        return ""
    namespace = metadata.get("namespace")
    return f"job/{namespace}/{metadata['name']}" if namespace else f"job/{metadata['name']}"
