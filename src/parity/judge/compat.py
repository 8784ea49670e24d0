"""The verdict's compatibility section: what each side could not run, or ran elsewhere.

Built from each side's ``ops.json`` (the scan that follows the timed steps, or the one a
failed side ran after its error) and the environment manifests: unsupported ops,
fallbacks, host syncs, graph breaks and custom ops per side, and the versions of python,
torch and the backend packages side by side with mismatches flagged. Informational: it
adds no gate (a side that cannot run an op fails the "both sides ran" gate already).
"""

from __future__ import annotations

from typing import Any

from parity.bundle import Bundle

MAX_LISTED = 20


def side_summary(ops: dict[str, Any]) -> dict[str, Any]:
    """The compatibility figures of one side's ``ops.json`` (``scanned: False`` if none)."""
    if not ops:
        return {"scanned": False}
    summary = ops.get("summary") or {}
    graphs = ops.get("graphs") or {}
    backend = (ops.get("fallbacks") or {}).get("backend") or {}
    mismatch = (ops.get("fallbacks") or {}).get("device_mismatch") or []
    return {
        "scanned": True,
        "scan_error": ops.get("scan_error"),
        "after_failure": bool(ops.get("after_failure")),
        "clean": bool(ops.get("clean")),
        "custom_ops": [
            {"op": c["op"], "where": _first_where(c), "test_first": True}
            for c in (ops.get("custom_ops") or [])[:MAX_LISTED]
        ],
        "unsupported": [
            {"op": u["op"], "dtypes": u.get("dtypes", []), "where": _first_where(u)}
            for u in (ops.get("unsupported") or [])[:MAX_LISTED]
        ],
        "fallbacks": {
            "backend": backend.get("backend"),
            "ops": list(backend.get("fallback_ops") or [])[:MAX_LISTED],
            "device_mismatch": [
                {"op": m["op"], "where": m.get("where")} for m in mismatch[:MAX_LISTED]
            ],
        },
        "host_syncs": [
            {"op": s["op"], "where": s.get("where"), "count": s.get("count"), "why": s["detail"]}
            for s in (ops.get("host_syncs") or [])[:MAX_LISTED]
        ],
        "graph_breaks": summary.get("graph_breaks"),
        "graph_break_reasons": [
            {"reason": r["reason"], "where": r.get("where")}
            for r in ((graphs.get("explain") or {}).get("reasons") or [])[:MAX_LISTED]
        ],
        "fullgraph": summary.get("fullgraph"),
        "compile_device_error": graphs.get("device_error"),
        "recompilations": summary.get("recompilations"),
        "counts": {
            k: summary.get(k)
            for k in ("unsupported", "fallbacks", "host_syncs", "custom_ops", "ops")
        },
    }


def _first_where(entry: dict[str, Any]) -> str | None:
    sources = entry.get("sources") or []
    return str(sources[0]["where"]) if sources else None


def _env_versions(bundle: Bundle) -> dict[str, Any]:
    env = bundle.manifest.get("environment") or {}
    return {
        "python": env.get("python"),
        "torch": (env.get("torch") or {}).get("version"),
        "packages": (env.get("device") or {}).get("backend_packages") or {},
    }


def versions(a: Bundle, b: Bundle) -> list[dict[str, Any]]:
    """Python, torch and each backend package, side by side; ``mismatch`` where both
    sides have it in different versions (a package on one side only is expected when the
    devices differ, and is marked ``one_side``)."""
    from parity.judge.verdict import environment_differences

    differing = {d["field"] for d in environment_differences(a, b)}
    va, vb = _env_versions(a), _env_versions(b)
    rows: list[dict[str, Any]] = [
        {"name": name, "baseline": va[name], "target": vb[name], "mismatch": name in differing}
        for name in ("python", "torch")
    ]
    for name in sorted(set(va["packages"]) | set(vb["packages"])):
        x, y = va["packages"].get(name), vb["packages"].get(name)
        rows.append(
            {
                "name": name,
                "baseline": x,
                "target": y,
                "mismatch": x is not None and y is not None and x != y,
                "one_side": (x is None) != (y is None),
            }
        )
    return rows


def compatibility(a: Bundle, b: Bundle) -> dict[str, Any]:
    """The compatibility section from a baseline and a target bundle."""
    target = side_summary(b.ops)
    return {
        "baseline": side_summary(a.ops),
        "target": target,
        "versions": versions(a, b),
        "target_clean": target.get("clean") if target.get("scanned") else None,
        "method": (
            "each side's op scan (ops.json) after its timed steps, or after its failure; "
            "fallbacks are what the backend reports plus outputs found on another device"
        ),
    }
