"""JSON Schemas of everything parity writes, generated from the typed model.

One schema per document (``parity schema [NAME]``), derived by the codec from the same
dataclasses that read and write the document, so a schema cannot drift from the code.
Objects are closed (``additionalProperties: false``): the documents carry a schema
version, and a reader refuses what it does not know rather than guessing.
"""

from __future__ import annotations

from parity.bundle import (
    CAPTURE,
    CURVE,
    DIGEST,
    INPUTS,
    MANIFEST,
    METRICS,
    OPS,
    OUTPUTS,
    SIDE_FILE,
    VERDICT,
    Digest,
)
from parity.model import SCHEMA_VERSION
from parity.model.checks import CheckResult
from parity.model.codec import Schema, json_schema
from parity.model.job import Event, Job, WorkerError
from parity.model.manifest import Manifest
from parity.model.metrics import Metrics
from parity.model.numerics import Capture, RunOutputs
from parity.model.ops import OpsCensus
from parity.model.reports import Curve, ScalingReport
from parity.model.side import SideFile
from parity.model.verdict import JudgeInputs, Verdict
from parity.request import CompareRequest

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "urn:parity:schema:"
#: name -> (document type, file, what it is)
DOCUMENTS: dict[str, tuple[type, str, str]] = {
    "manifest": (Manifest, MANIFEST, "what ran, where, and how it ended"),
    "metrics": (Metrics, METRICS, "phases, step samples, memory, throughput, latency"),
    "numerics": (RunOutputs, OUTPUTS, "the loss curve and output summaries"),
    "capture": (Capture, CAPTURE, "the numerics probe: outputs, gradients, modules"),
    "ops": (OpsCensus, OPS, "the op census of a scan"),
    "job": (Job, "job.json", "what the parent handed the worker"),
    "error": (WorkerError, "error.json", "the worker's first exception"),
    "event": (Event, "events.jsonl", "one line of the worker's events"),
    "digest": (Digest, DIGEST, "the sha256 of every other file of a bundle"),
    "side": (SideFile, SIDE_FILE, "how measuring a side ended"),
    "request": (CompareRequest, "request.json", "a comparison's validated request"),
    "inputs": (JudgeInputs, INPUTS, "what the verdict depends on besides bundles"),
    "verdict": (Verdict, VERDICT, "the comparison's outcome"),
    "check": (CheckResult, "check.json", "a rollback, recovery or soak check"),
    "curve": (Curve, CURVE, "the throughput-latency curve of --batch-sizes"),
    "scaling": (ScalingReport, "scaling.json", "parity scale's report"),
}
SCHEMAS = tuple(DOCUMENTS)


def schema(name: str) -> Schema:
    """One named schema as a standalone JSON Schema document; KeyError for other names."""
    tp, file, what = DOCUMENTS[name]
    body = json_schema(tp, title=file, description=f"{what} (schema version {SCHEMA_VERSION})")
    return {"$schema": DRAFT, "$id": BASE_ID + name, **body}


def all_schemas() -> dict[str, Schema]:
    return {name: schema(name) for name in SCHEMAS}
