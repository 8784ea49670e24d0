"""JSON Schemas of everything parity writes, generated from the typed model.

One schema per document (``parity schema [NAME]``), derived by the codec from the same
dataclasses that read and write the document, so a schema cannot drift from the code.
Objects are closed (``additionalProperties: false``): the documents carry a schema
version, and a reader refuses what it does not know rather than guessing.
"""

from __future__ import annotations

from importlib import import_module

from parity.model import SCHEMA_VERSION
from parity.model.codec import Schema, json_schema

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "urn:parity:schema:"
#: name -> (document type as ``module:Name``, imported when its schema is asked for, file
#: (``module:NAME`` where ``parity.bundle`` names it), what it is): the names cost no import
#: (the command line lists them)
DOCUMENTS: dict[str, tuple[str, str, str]] = {
    "manifest": (
        "parity.model.manifest:Manifest",
        "parity.bundle:MANIFEST",
        "what ran, where, and how it ended",
    ),
    "metrics": (
        "parity.model.metrics:Metrics",
        "metrics.json",
        "phases, step samples, memory, throughput, latency",
    ),
    "numerics": (
        "parity.model.numerics:RunOutputs",
        "numerics.json",
        "the loss curve and output summaries",
    ),
    "capture": (
        "parity.model.numerics:Capture",
        "capture.json",
        "the numerics probe: outputs, gradients, modules",
    ),
    "ops": ("parity.model.ops:OpsCensus", "ops.json", "the op census of a scan"),
    "job": ("parity.model.job:Job", "job.json", "what the parent handed the worker"),
    "error": ("parity.model.job:WorkerError", "error.json", "the worker's first exception"),
    "event": ("parity.model.job:Event", "events.jsonl", "one line of the worker's events"),
    "digest": ("parity.bundle:Digest", "digest.json", "the sha256 of every other file of a bundle"),
    "logs": (
        "parity.model.manifest:Logs",
        "logs.json",
        "the logs of a bundle that were cut, and by how much",
    ),
    "side": ("parity.model.side:MeasureRecord", "side.json", "how measuring a side ended"),
    "request": (
        "parity.request:CompareRequest",
        "request.json",
        "a comparison's validated request",
    ),
    "inputs": (
        "parity.model.inputs:JudgeInputs",
        "inputs.json",
        "what the verdict depends on besides bundles",
    ),
    "verdict": (
        "parity.model.verdict:Verdict",
        "parity.bundle:VERDICT",
        "the comparison's outcome",
    ),
    "check": (
        "parity.model.checks:CheckResult",
        "check.json",
        "a rollback, recovery or soak check",
    ),
    "curve": (
        "parity.model.reports:Curve",
        "curve.json",
        "the throughput-latency curve of --batch-sizes",
    ),
    "scaling": ("parity.model.reports:ScalingReport", "scaling.json", "parity scale's report"),
}
SCHEMAS = tuple(DOCUMENTS)


def _named(where: str) -> object:
    module, _, attr = where.partition(":")
    return getattr(import_module(module), attr)


def document_file(name: str) -> str:
    """The file a document is written to (``parity.bundle``'s name for it, where it has one)."""
    file = DOCUMENTS[name][1]
    found = _named(file) if ":" in file else file
    assert isinstance(found, str)
    return found


def schema(name: str) -> Schema:
    """One named schema as a standalone JSON Schema document; KeyError for other names."""
    where, _, what = DOCUMENTS[name]
    tp, file = _named(where), document_file(name)
    body = json_schema(tp, title=file, description=f"{what} (schema version {SCHEMA_VERSION})")
    return {"$schema": DRAFT, "$id": BASE_ID + name, **body}


def all_schemas() -> dict[str, Schema]:
    return {name: schema(name) for name in SCHEMAS}
