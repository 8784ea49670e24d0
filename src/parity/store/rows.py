"""What the index keeps of a bundle and of a comparison, as the rows of its tables."""

from __future__ import annotations

import time
from pathlib import Path

from parity.bundle import Bundle
from parity.model.codec import dumps
from parity.model.verdict import Verdict

#: one column's value as the index stores it
Value = str | int | float | None
#: a table row: its values by column name
Row = dict[str, Value]


def bundle_row(
    path: Path, bundle: Bundle, bid: str, comparison_id: str | None, role: str | None
) -> Row:
    m = bundle.manifest
    env, desc = m.environment, m.workload.description
    return {
        "id": bid,
        "path": str(path),
        "comparison_id": comparison_id,
        "role": role or m.role,
        "run": path.name,
        "status": m.status,
        "reason": m.reason,
        "side_spec": str(m.side),
        "device_type": m.side.device,
        "device_name": env.device.name if env else None,
        "workload": desc.name,
        "size": desc.size,
        "kind": desc.kind,
        "fingerprint": m.workload.fingerprint,
        "parity_version": m.parity_version,
        "torch_version": env.torch.version if env else None,
        "hostname": env.hostname if env else None,
        "started_unix": m.started_unix,
        "finished_unix": m.finished_unix,
        "indexed_unix": time.time(),
    }


def comparison_row(path: Path, verdict: Verdict, cid: str, time_unix: float) -> Row:
    w, speed = verdict.workload, verdict.speed
    return {
        "id": cid,
        "path": str(path),
        "time_unix": time_unix,
        "indexed_unix": time.time(),
        "workload": w.name,
        "size": w.size,
        "kind": w.kind,
        "fingerprint": w.fingerprint,
        "baseline_spec": str(verdict.sides.baseline.side),
        "target_spec": str(verdict.sides.target.side),
        "baseline_device": verdict.sides.baseline.device_name,
        "target_device": verdict.sides.target.device_name,
        "passed": int(verdict.passed),
        "exit_code": verdict.exit_code,
        "speed_ratio": speed.ratio if speed else None,
        "speed_low": speed.interval.low if speed else None,
        "speed_high": speed.interval.high if speed else None,
        "speed_verdict": speed.verdict if speed else None,
        "verdict": dumps(verdict, indent=None),
    }
