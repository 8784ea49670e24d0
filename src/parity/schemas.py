"""JSON Schemas of what parity writes: a bundle's documents and the verdict.

Written by hand as dicts, so that they say what the contract is rather than what the
code happens to emit; ``tests/test_schemas.py`` checks real bundles and verdicts against
them. Every object allows properties it does not name: documents grow (a later parity
adds sections, such as ``numerics`` or ``cost`` to the verdict) and a reader must ignore
what it does not know. ``parity schema [NAME]`` prints them.
"""

from __future__ import annotations

from typing import Any

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "urn:parity:schema:"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _obj(
    properties: dict[str, Any], required: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out.update(extra)
    return out


NUM = {"type": "number"}
NONNEG = {"type": "number", "minimum": 0}
INT = {"type": "integer"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
SECONDS = _nullable(NONNEG)
BYTES = _nullable({"type": "integer", "minimum": 0})
STATUS = {"enum": ["ok", "failed", "incomplete"]}

SIDE_SPEC = _obj(
    {
        "spec": STR,
        "device": STR,
        "index": _nullable(INT),
        "precision": {"enum": ["fp32", "bf16", "fp16"]},
        "compile": BOOL,
        "compile_backend": _nullable(STR),
        "threads": _nullable(INT),
        "deterministic": BOOL,
        "emulate": _nullable(STR),
    },
    ["spec", "device"],
    description="the parsed side spec, e.g. cpu+bf16",
)

WORKLOAD = _obj(
    {
        "spec": _obj({"name": STR, "size": STR, "seed": INT}, ["name"]),
        "fingerprint": SHA256,
        "parts": _obj(
            {},
            description="each fingerprint part on its own, so a mismatch can be named",
        ),
        "description": _obj(
            {
                "name": STR,
                "kind": {"enum": ["train", "infer", "generate"]},
                "size": STR,
                "batch_size": INT,
                "seq_len": _nullable(INT),
                "steps": INT,
                "seed": INT,
            },
        ),
    },
    ["fingerprint"],
)

ENVIRONMENT = _obj(
    {
        "parity": STR,
        "python": STR,
        "hostname": STR,
        "torch": _obj({"version": STR}, ["version"]),
        "device": _obj({"type": STR, "name": _nullable(STR), "count": _nullable(INT)}),
        "cpu": {"type": "object"},
        "flags": {"type": "object"},
        "pip_freeze": _obj({"sha256": {"type": ["string", "null"]}}),
        "env": _obj({}, additionalProperties=STR, description="allow-listed, secrets redacted"),
    },
    ["python", "torch", "device"],
)

MANIFEST = _obj(
    {
        "schema_version": {"type": "integer", "minimum": 1},
        "parity_version": STR,
        "status": STATUS,
        "reason": _nullable(STR),
        "stderr_tail": _nullable(STR),
        "role": STR,
        "repeat": {"type": "integer", "minimum": 0},
        "side": SIDE_SPEC,
        "workload": WORKLOAD,
        "environment": ENVIRONMENT,
        "settings": {"type": "object"},
        "started_unix": NUM,
        "finished_unix": NUM,
        "pid": INT,
    },
    ["schema_version", "status", "side", "workload"],
    title="manifest.json",
    description="what ran, where, and how it ended",
    allOf=[
        {
            "if": {"properties": {"status": {"const": "ok"}}},
            "then": {"required": ["environment", "settings", "finished_unix"]},
        },
        {
            "if": {"properties": {"status": {"const": "failed"}}},
            "then": {"required": ["reason"], "properties": {"reason": STR}},
        },
    ],
)

PERCENTILES = _obj(
    {
        "p50": SECONDS,
        "p90": SECONDS,
        "p99": SECONDS,
        "mean": SECONDS,
        "n": {"type": "integer", "minimum": 0},
    },
    ["p50", "p90", "p99", "n"],
)
RATE_PERCENTILES = _obj({"p50": _nullable(NUM), "n": INT}, ["p50"])
MEMORY_PHASE = _obj(
    {
        "device": _obj({"allocated": BYTES, "reserved": BYTES}),
        "host_peak_rss": BYTES,
    },
    ["host_peak_rss"],
)

METRICS = _obj(
    {
        "units": {"const": "seconds"},
        "phases": _obj(
            {
                "start_import_s": SECONDS,
                "worker_import_s": SECONDS,
                "load_s": SECONDS,
                "first_step_s": SECONDS,
                "warmup_s": SECONDS,
                "warmup_steps": {"type": "integer", "minimum": 0},
                "steady_s": SECONDS,
                "steady_steps": {"type": "integer", "minimum": 0},
            },
            ["load_s", "first_step_s", "warmup_s", "steady_s"],
        ),
        "steady_state": _nullable({"type": "object"}),
        "steady_from_step": {"type": "integer", "minimum": 1},
        "step_samples_s": {"type": "array", "items": NONNEG, "minItems": 1},
        "summary": _nullable(
            _obj(
                {"n": INT, "median": NONNEG, "iqr": NONNEG, "mean": NONNEG, "min": NONNEG},
                ["n", "median", "iqr"],
            )
        ),
        "noise_warnings": {"type": "array", "items": STR},
        "items_per_step": _obj({"samples": INT, "tokens": _nullable(INT)}, ["samples"]),
        "throughput": _obj(
            {"samples_per_s": _nullable(NONNEG), "tokens_per_s": _nullable(NONNEG)},
            ["samples_per_s"],
        ),
        "memory": _obj({"load": MEMORY_PHASE, "steps": MEMORY_PHASE}, ["steps"]),
        "flops": _obj(
            {
                "per_step": _nullable(NONNEG),
                "achieved_flops": _nullable(NONNEG),
                "mfu": _nullable(NONNEG),
            }
        ),
        "generation": _obj(
            {
                "ttft_s": PERCENTILES,
                "tpot_s": PERCENTILES,
                "itl_s": PERCENTILES,
                "e2e_s": PERCENTILES,
                "output_tokens_per_s": RATE_PERCENTILES,
                "output_tokens": INT,
                "requests_per_step": INT,
            },
            ["ttft_s", "tpot_s", "e2e_s"],
        ),
        "inference": _obj({"latency_s": PERCENTILES}, ["latency_s"]),
    },
    title="metrics.json",
    description=(
        "phases, raw step samples in seconds, summaries, memory peaks, throughput; an fp64 "
        "reference bundle ({reference: true}) and a scan bundle ({mode: scan}) time nothing"
    ),
    allOf=[
        {
            "if": {
                "anyOf": [
                    {"required": ["reference"], "properties": {"reference": {"const": True}}},
                    {"required": ["mode"], "properties": {"mode": {"const": "scan"}}},
                ]
            },
            "else": {
                "required": [
                    "units",
                    "phases",
                    "steady_from_step",
                    "step_samples_s",
                    "summary",
                    "memory",
                ]
            },
        }
    ],
)

NUMERICS = _obj(
    {
        "losses": {
            "type": "array",
            "items": _nullable(NUM),
            "description": "one loss per step; null where it was not finite",
        },
        "outputs": _obj(
            {},
            additionalProperties=_obj(
                {
                    "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "dtype": STR,
                    "finite": BOOL,
                    "mean": _nullable(NUM),
                    "std": _nullable(NUM),
                    "min": _nullable(NUM),
                    "max": _nullable(NUM),
                },
                ["shape", "dtype", "finite"],
            ),
            description="summaries of the tensors in numerics.safetensors, by name",
        ),
        "extra": {"type": "object"},
    },
    ["losses", "outputs"],
    title="numerics.json",
    description="loss curve and output summaries (tensors in numerics.safetensors)",
)

SIDE_FILE = _obj(
    {
        "stop": _obj(
            {"reason": STR, "message": STR, "order": {"type": "array", "items": STR}},
            ["reason", "message"],
        ),
        "plan": {"type": "object"},
    },
    title="side.json",
    description="how measuring a side ended (one per side directory)",
)

CHECK = _obj(
    {
        "name": STR,
        "passed": _nullable(BOOL),
        "detail": STR,
        "kind": STR,
        "gated": BOOL,
        "tolerance": _nullable(NUM),
    },
    ["name", "passed"],
)
PAIR = _obj({"baseline": {}, "target": {}}, ["baseline", "target"])
SIDE_INFO = _obj(
    {
        "spec": STR,
        "status": {"enum": ["ok", "failed"]},
        "reason": _nullable(STR),
        "stderr_tail": _nullable(STR),
        "repeats": {"type": "integer", "minimum": 1},
        "repeats_ok": {"type": "integer", "minimum": 0},
        "device_name": _nullable(STR),
        "bundle": STR,
        "median_step_s": SECONDS,
        "throughput": _nullable({"type": "object"}),
        "flops": _nullable({"type": "object"}),
        "generation": _nullable({"type": "object"}),
        "inference": _nullable({"type": "object"}),
        "noise_warnings": {"type": "array", "items": STR},
    },
    ["spec", "status", "repeats", "repeats_ok"],
)

#: the sections every verdict has (later sections are optional and render generically)
VERDICT_CORE = (
    "passed",
    "exit_code",
    "workload",
    "sides",
    "fairness",
    "config_differences",
    "environment_differences",
    "gates",
    "quality",
    "speed",
    "memory",
    "phases",
)

VERDICT = _obj(
    {
        "passed": BOOL,
        "exit_code": {"enum": [0, 1]},
        "workload": _obj(
            {
                "name": _nullable(STR),
                "size": _nullable(STR),
                "kind": _nullable(STR),
                "fingerprint": SHA256,
                "description": {"type": "object"},
            },
            ["name", "fingerprint"],
        ),
        "sides": _obj({"baseline": SIDE_INFO, "target": SIDE_INFO}, ["baseline", "target"]),
        "fairness": _obj(
            {
                "fingerprint_match": BOOL,
                "fingerprint": SHA256,
                "differing_fields": {"type": "array", "items": STR},
                "allowed": _obj({}, additionalProperties=STR),
            },
            ["fingerprint_match", "differing_fields", "allowed"],
        ),
        "config_differences": {
            "type": "array",
            "items": _obj({"setting": STR}, ["setting", "baseline", "target"]),
        },
        "environment_differences": {
            "type": "array",
            "items": _obj({"field": STR}, ["field", "baseline", "target"]),
        },
        "gates": {
            "type": "array",
            "items": _obj({"name": STR, "passed": BOOL, "detail": STR}, ["name", "passed"]),
            "minItems": 1,
        },
        "quality": _obj(
            {
                "passed": BOOL,
                "checks": {"type": "array", "items": CHECK},
                "tolerances": _obj({}, additionalProperties=NUM),
                "determinism": {"type": "object"},
            },
            description="empty when a side did not run to the end",
        ),
        "speed": _nullable(
            _obj(
                {
                    "ratio": NONNEG,
                    "speedup": NONNEG,
                    "baseline_median_s": SECONDS,
                    "target_median_s": SECONDS,
                    "interval": _obj(
                        {
                            "low": NONNEG,
                            "high": NONNEG,
                            "confidence": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                            "method": STR,
                        },
                        ["low", "high", "confidence"],
                    ),
                    "verdict": {"enum": ["faster", "slower", "indistinguishable"]},
                    "reliable": BOOL,
                    "unreliable_because": {"type": "array", "items": STR},
                    "repeats": _obj({"baseline": INT, "target": INT}, ["baseline", "target"]),
                    "note": _nullable(STR),
                    "compliance": {"type": "array", "items": CHECK},
                },
                ["ratio", "speedup", "interval", "verdict"],
            )
        ),
        "memory": {"anyOf": [PAIR, {"type": "object", "maxProperties": 0}]},
        "phases": {"anyOf": [PAIR, {"type": "object", "maxProperties": 0}]},
    },
    list(VERDICT_CORE),
    title="verdict.json",
    description="the comparison's outcome; sections appear in the order they are checked",
)

SCHEMAS: dict[str, dict[str, Any]] = {
    "manifest": MANIFEST,
    "metrics": METRICS,
    "numerics": NUMERICS,
    "side": SIDE_FILE,
    "verdict": VERDICT,
}


def schema(name: str) -> dict[str, Any]:
    """One named schema as a standalone JSON Schema document; KeyError for other names."""
    return {"$schema": DRAFT, "$id": BASE_ID + name, **SCHEMAS[name]}


def all_schemas() -> dict[str, dict[str, Any]]:
    return {name: schema(name) for name in SCHEMAS}
