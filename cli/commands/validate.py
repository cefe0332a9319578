"""`lavalog validate FILE...`: check Volcano Job manifests before submitting them.

Each Job of each file goes through the same admission the controller applies, so a
manifest that passes here is one the controller will run. Fields Volcano's Job does not
have (a typo such as `maxRetrys`, which an API server prunes and the controller so never
sees) are warnings, errors with `--strict`. Documents of other kinds
are skipped; a file without a Job fails. With `-o yaml|json` the accepted jobs are
printed with Volcano's defaults filled in (what the controller will actually run) and
the verdicts move to stderr, so the output can be piped on.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import msgspec
import yaml

from lavalog.apimachinery import crds
from lavalog.apimachinery.schema import UnknownField, apply
from lavalog.cli import exit_codes
from lavalog.cli.output import write_json, write_yaml_stream
from lavalog.controller.admission import Admitted, admit_job
from lavalog.events.volcano.api import API_VERSION, GROUP, KIND, FieldError

#: the CustomResourceDefinition of Volcano's Job, whose schema a Job document is held to
JOB_CRD = f"jobs.{GROUP}"
#: libyaml's loader when PyYAML was built with it: twice as fast on large manifests
#: (bench/validate.py)
LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML (multi-document) or JSON")
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "wide", "yaml", "json"),
        default="text",
        help="text: a verdict per job; wide: a table of the jobs with their defaults (verdicts "
        "on stderr); yaml/json: the accepted jobs with defaults applied",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default="",
        help="the namespace of jobs that name none (as kubectl apply -n); a job that names "
        "another one is an error",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="unknown fields (typos the controller would ignore) are errors, not warnings",
    )
    parser.epilog = exit_codes.VALIDATE_EPILOG


class Verdict(msgspec.Struct, frozen=True):
    """What validate says of one Job document."""

    errors: tuple[FieldError, ...]
    warnings: tuple[UnknownField, ...]
    #: the job with Volcano's defaults, when it is accepted
    job: dict[str, Any] | None


def run(args: argparse.Namespace) -> int:
    report = sys.stdout if args.output == "text" else sys.stderr
    accepted: list[dict[str, Any]] = []
    rows: list[tuple[str, ...]] = []
    failed = False
    for file in args.files:
        try:
            documents = _load(Path(file))
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            print(f"{file}: cannot be read: {exc}", file=report)
            failed = True
            continue
        jobs = 0
        for number, document in enumerate(documents, start=1):
            label = f"{file}#{number}" if len(documents) > 1 else file
            if not _meant_as_job(document):
                print(f"{label}: {_kind(document)}: not a Volcano Job, skipped", file=report)
                continue
            jobs += 1
            document = in_namespace(document, args.namespace)
            verdict = judge(document, strict=args.strict)
            mismatch = _namespace_mismatch(document, args.namespace)
            if mismatch is not None:  # as kubectl apply -n refuses it
                verdict = Verdict((mismatch, *verdict.errors), verdict.warnings, None)
            failed |= bool(verdict.errors)
            _print_verdict(label, document, verdict, report)
            rows.append(_row(label, document, verdict))
            if verdict.job is not None:
                accepted.append(verdict.job)
        if not jobs:
            print(f"{file}: no Volcano Job ({API_VERSION} {KIND}) in it", file=report)
            failed = True
    if args.output == "yaml":
        write_yaml_stream(accepted)
    elif args.output == "json":
        write_json({"apiVersion": "v1", "kind": "List", "items": accepted})
    elif args.output == "wide":
        print(_table([WIDE_COLUMNS, *rows]))
    return exit_codes.INVALID if failed else exit_codes.OK


def in_namespace(document: object, namespace: str) -> object:
    """The document with `-n`'s namespace where it names none."""
    if not namespace or not isinstance(document, Mapping):
        return document
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("namespace"):
        return document
    return {**document, "metadata": {**metadata, "namespace": namespace}}


def _namespace_mismatch(document: object, namespace: str) -> FieldError | None:
    metadata = document.get("metadata") if isinstance(document, Mapping) else None
    named = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    if namespace and named and named != namespace:
        return FieldError("metadata.namespace", f"is {named!r}, not {namespace!r} as -n says")
    return None


WIDE_COLUMNS = (
    "FILE",
    "JOB",
    "QUEUE",
    "TASKS",
    "REPLICAS",
    "MIN AVAILABLE",
    "MAX RETRY",
    "VERDICT",
)


def _row(label: str, document: object, verdict: Verdict) -> tuple[str, ...]:
    job = verdict.job or {}
    spec = job.get("spec") or {}
    tasks = spec.get("tasks") or []
    return (
        label,
        _job_name(document).removeprefix("job/") or "-",
        str(spec.get("queue", "-")),
        str(len(tasks)) if job else "-",
        str(sum(int(task.get("replicas") or 0) for task in tasks)) if job else "-",
        str(spec.get("minAvailable", "-")),
        str(spec.get("maxRetry", "-")),
        "invalid" if verdict.errors else "ok",
    )


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _load(path: Path) -> list[object]:
    """The non-empty documents of a file: JSON if it is named so, else (multi-document) YAML."""
    text = path.read_text(encoding="utf-8")
    documents = [json.loads(text)] if path.suffix == ".json" else yaml.load_all(text, LOADER)
    return [document for document in documents if document is not None]


def _meant_as_job(document: object) -> bool:
    """A Job of any API group (a wrong apiVersion is reported), or something without a
    kind, which fails; other kinds (a ConfigMap, Volcano's CronJob) are skipped."""
    if not isinstance(document, Mapping):
        return True
    return bool(document.get("kind", KIND) == KIND)


def _kind(document: object) -> str:
    assert isinstance(document, Mapping)
    name = _job_name(document).removeprefix("job/")
    return f"{document.get('apiVersion', '')} {document.get('kind')}" + (f" {name}" if name else "")


def judge(document: object, *, strict: bool) -> Verdict:
    """Every reason the document is not a valid Volcano Job, its unknown fields (errors
    when `strict`), and the job with its defaulted spec if it passes."""
    if not isinstance(document, Mapping):
        return Verdict((FieldError("(document)", "must be a Job object (a mapping)"),), (), None)
    errors = [
        FieldError(field, f"must be {expected!r}, not {document.get(field)!r}")
        for field, expected in (("apiVersion", API_VERSION), ("kind", KIND))
        if document.get(field) != expected
    ]
    job = copy.deepcopy(dict(document))  # the walk prunes what it reports
    unknown = tuple(apply(crds.object_schema(JOB_CRD), job, defaults=False).unknown)
    if strict:
        errors += [FieldError(field.path, _unknown(field, ignored=False)) for field in unknown]
        unknown = ()
    spec = document.get("spec")
    if not isinstance(spec, Mapping):
        errors.append(FieldError("spec", "required: the job's tasks and policies"))
        return Verdict(tuple(errors), unknown, None)
    result = admit_job(spec, _annotations(document))
    if not isinstance(result, Admitted):
        return Verdict((*errors, *result.errors), unknown, None)
    if errors:
        return Verdict(tuple(errors), unknown, None)
    return Verdict((), unknown, {**document, "spec": msgspec.to_builtins(result.spec)})


def _annotations(document: Mapping[str, Any]) -> dict[str, str]:
    """The Job's annotations: admission reads lavalog's extensions (`lavalog.io/...`)
    from them, as the controller does."""
    metadata = document.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return {}
    return {str(name): value for name, value in annotations.items() if isinstance(value, str)}


def _print_verdict(label: str, document: object, verdict: Verdict, out: TextIO) -> None:
    name = _job_name(document)
    where = f"{label}: {name}" if name else label
    counts = [
        _count(len(verdict.errors), "error"),
        _count(len(verdict.warnings), "warning"),
    ]
    summary = ", ".join(count for count in counts if count)
    if not verdict.errors:
        summary = "ok" + (f" ({summary})" if summary else "")
    print(f"{where}: {summary}", file=out)
    for error in verdict.errors:
        print(f"  {error}", file=out)
    for warning in verdict.warnings:
        print(f"  warning: {warning.path}: {_unknown(warning, ignored=True)}", file=out)


def _unknown(field: UnknownField, *, ignored: bool) -> str:
    """`unknown field, ignored (did you mean maxRetry?)`; an error says no `ignored`."""
    hint = f" (did you mean {' or '.join(field.close)}?)" if field.close else ""
    return f"unknown field{', ignored' if ignored else ''}{hint}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number > 1 else ''}" if number else ""


def _job_name(document: object) -> str:
    """`job/namespace/name` as the manifest gives it, or "" if it has no name."""
    metadata = document.get("metadata") if isinstance(document, Mapping) else None
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        return ""
    namespace = metadata.get("namespace")
    return f"job/{namespace}/{metadata['name']}" if namespace else f"job/{metadata['name']}"
