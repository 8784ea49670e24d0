"""The parts of the verdict a decision rests on besides the measurements: the comparison
contract, what is still unproven, and the operational checklist."""

from __future__ import annotations

from typing import Any

from parity.bundle import Bundle
from parity.workloads.frozen import FINGERPRINT_PARTS

MAY_DIFFER = (
    "device",
    "index",
    "precision",
    "compile",
    "compile_backend",
    "threads",
    "deterministic",
    "emulate",
)

#: what a migration must still prove, and what would prove it
UNPROVEN = (
    ("rollback path", "train on the target, checkpoint, resume on the baseline, and compare"),
    ("sustained load", "a soak run of hours at production load: latency drift, memory growth"),
    ("failure recovery", "kill a target run, resume from its checkpoint, compare the curve"),
    ("multi-device scaling", "the same workload on 1, 2, 4, ... devices: efficiency"),
    ("the real data pipeline", "the production data loader and preprocessing, not frozen data"),
)
OPERATIONAL_LABELS = {
    "instance_availability": "instance availability",
    "quotas": "quotas",
    "storage_and_data_movement": "storage and data movement",
    "monitoring": "monitoring",
    "deployment_tooling": "deployment tooling",
}


def contract(
    a: Bundle, b: Bundle, fairness: dict[str, Any], config_differences: list[dict[str, str]]
) -> dict[str, Any]:
    """What must match (each fingerprint part) and what may differ (the side's settings)."""
    pa = a.manifest["workload"].get("parts", {})
    pb = b.manifest["workload"].get("parts", {})
    must = []
    for part in FINGERPRINT_PARTS:
        x, y = pa.get(part), pb.get(part)
        row: dict[str, Any] = {
            "field": part,
            "baseline": _short(x),
            "target": _short(y),
            "matches": x == y,
        }
        if x != y:
            row["allowed"] = fairness.get("allowed", {}).get(part)
        must.append(row)
    return {
        "must_match": must,
        "may_differ": list(MAY_DIFFER),
        "configuration_changes": config_differences,
        "holds": all(r["matches"] or r.get("allowed") for r in must),
    }


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    return value


def unproven(checked: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Each item ticked only where this comparison checked it (``checked``: item -> how)."""
    checked = checked or {}
    return [
        {
            "item": item,
            "checked": item in checked,
            "evidence": checked.get(item),
            "how_to_check": how,
        }
        for item, how in UNPROVEN
    ]


def operational(answers: dict[str, str] | None) -> list[dict[str, Any]]:
    answers = answers or {}
    return [
        {"item": label, "answer": answers.get(key) or None, "answered": bool(answers.get(key))}
        for key, label in OPERATIONAL_LABELS.items()
    ]
