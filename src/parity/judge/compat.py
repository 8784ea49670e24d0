"""The verdict's compatibility section: what each side could not run, or ran elsewhere.

Built from each side's ``ops.json`` (the scan that follows the timed steps, or the one a
failed side ran after its error) and the environment manifests: unsupported ops,
fallbacks, host syncs, graph breaks and custom ops per side, and the versions of python,
torch and the backend packages side by side with mismatches flagged. Informational: it
adds no gate (a side that cannot run an op fails the "both sides ran" gate already).
"""

from __future__ import annotations

from parity.model.bundle import Bundle
from parity.model.manifest import Environment
from parity.model.ops import OpFinding, OpsCensus
from parity.model.verdict import (
    CompatCounts,
    Compatibility,
    FallbackSummary,
    OpAt,
    ReasonAt,
    ScanSummaryError,
    SideCompatibility,
    VersionRow,
)

MAX_LISTED = 20


def _first_where(entry: OpFinding) -> str | None:
    return entry.sources[0].where if entry.sources else None


def side_summary(ops: OpsCensus | None) -> SideCompatibility:
    """The compatibility figures of one side's ``ops.json`` (``scanned: False`` if none)."""
    if ops is None:
        return SideCompatibility(scanned=False)
    summary, graphs = ops.summary, ops.graphs
    fallbacks = ops.fallbacks
    explain = graphs.explain if graphs is not None else None
    err = ops.scan_error
    return SideCompatibility(
        scanned=True,
        scan_error=ScanSummaryError(type=err.type, message=err.message, where=err.where)
        if err
        else None,
        after_failure=ops.after_failure,
        clean=ops.clean,
        custom_ops=tuple(
            OpAt(op=c.op, where=_first_where(c), test_first=True)
            for c in ops.custom_ops[:MAX_LISTED]
        ),
        unsupported=tuple(
            OpAt(op=u.op, dtypes=u.dtypes, where=_first_where(u))
            for u in ops.unsupported[:MAX_LISTED]
        ),
        fallbacks=FallbackSummary(
            backend=fallbacks.backend.backend if fallbacks else None,
            ops=fallbacks.ops()[:MAX_LISTED] if fallbacks else (),
            device_mismatch=tuple(
                OpAt(op=m.op, where=m.where) for m in fallbacks.device_mismatch[:MAX_LISTED]
            )
            if fallbacks
            else (),
        ),
        host_syncs=tuple(
            OpAt(op=s.op, where=s.where, count=s.count, why=s.detail)
            for s in ops.host_syncs[:MAX_LISTED]
        ),
        graph_breaks=summary.graph_breaks if summary else None,
        graph_break_reasons=tuple(
            ReasonAt(reason=r.reason, where=r.where) for r in explain.reasons[:MAX_LISTED]
        )
        if explain
        else (),
        fullgraph=summary.fullgraph if summary else None,
        compile_device_error=graphs.device_error if graphs else None,
        recompilations=summary.recompilations if summary else None,
        counts=CompatCounts(
            unsupported=summary.unsupported if summary else None,
            fallbacks=summary.fallbacks if summary else None,
            host_syncs=summary.host_syncs if summary else None,
            custom_ops=summary.custom_ops if summary else None,
            ops=summary.ops if summary else None,
        ),
    )


def _versions(env: Environment | None) -> tuple[str | None, str | None, dict[str, str | None]]:
    if env is None:
        return None, None, {}
    return env.python, env.torch.version, dict(env.device.backend_packages)


def versions(a: Bundle, b: Bundle) -> tuple[VersionRow, ...]:
    """Python, torch and each backend package, side by side; ``mismatch`` where both
    sides have it in different versions (a package on one side only is expected when the
    devices differ, and is marked ``one_side``)."""
    py_a, torch_a, pkgs_a = _versions(a.manifest.environment)
    py_b, torch_b, pkgs_b = _versions(b.manifest.environment)
    rows = [
        VersionRow(name="python", baseline=py_a, target=py_b, mismatch=py_a != py_b),
        VersionRow(name="torch", baseline=torch_a, target=torch_b, mismatch=torch_a != torch_b),
    ]
    for name in sorted(set(pkgs_a) | set(pkgs_b)):
        x, y = pkgs_a.get(name), pkgs_b.get(name)
        rows.append(
            VersionRow(
                name=name,
                baseline=x,
                target=y,
                mismatch=x is not None and y is not None and x != y,
                one_side=(x is None) != (y is None),
            )
        )
    return tuple(rows)


def compatibility(a: Bundle, b: Bundle) -> Compatibility:
    """The compatibility section from a baseline and a target bundle."""
    target = side_summary(b.ops)
    return Compatibility(
        baseline=side_summary(a.ops),
        target=target,
        versions=versions(a, b),
        target_clean=target.clean if target.scanned else None,
        method="compat.op-scan",
    )
