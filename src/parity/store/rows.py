"""What the index keeps of a bundle and of a comparison, as the rows of its tables."""

from __future__ import annotations

import time
from pathlib import Path

from parity.bundle import Bundle
from parity.model.codec import dumps
from parity.model.serving import ServeSide, ServeVerdict
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
        "device_string": m.side.device_string,
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
    sides = {"baseline": verdict.sides.baseline.side, "target": verdict.sides.target.side}
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
        **{f"{role}_device_type": side.device for role, side in sides.items()},
        **{f"{role}_device_string": side.device_string for role, side in sides.items()},
        "passed": int(verdict.passed),
        "exit_code": verdict.exit_code,
        "speed_ratio": speed.ratio if speed else None,
        "speed_low": speed.interval.low if speed else None,
        "speed_high": speed.interval.high if speed else None,
        "speed_verdict": speed.verdict if speed else None,
        "verdict": dumps(verdict, indent=None),
    }


#: a serving verdict's outcome as ``parity serve`` exits with it
SERVE_EXIT = {"pass": 0, "fail": 1, "inconclusive": 3}


def serving_row(
    path: Path, verdict: ServeVerdict, sides: dict[str, ServeSide], sid: str, time_unix: float
) -> Row:
    """A ``parity serve`` comparison: its endpoints, model, outcome and headline figures."""
    base, target = sides.get("baseline"), sides.get("target")
    models = list(dict.fromkeys(s.model for s in (base, target) if s is not None and s.model))
    rates = {r: (c.rate if c is not None else None) for r, c in verdict.capacity.items()}
    return {
        "id": sid,
        "path": str(path),
        "time_unix": time_unix,
        "indexed_unix": time.time(),
        "model": " / ".join(models) or None,
        "baseline_url": base.url if base else None,
        "target_url": target.url if target else None,
        "fingerprint": verdict.fingerprint,
        "outcome": verdict.outcome,
        "exit_code": SERVE_EXIT[verdict.outcome],
        "quality_rate": min((q.rate for q in verdict.quality), default=None),
        "baseline_rate": rates.get("baseline"),
        "target_rate": rates.get("target"),
        "ratio": verdict.ratio,
        "verdict": dumps(verdict, indent=None),
    }
