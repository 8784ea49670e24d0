"""Terminal rendering of a scan (``parity scan``) and of a verdict's compatibility section."""

from __future__ import annotations

from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text


def _dtypes(entry: dict[str, Any]) -> str:
    return "; ".join(d for d in entry.get("dtypes", []) if d) or "-"


def _findings_table(title: str, rows: list[tuple[str, ...]], columns: tuple[str, ...]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _compile_lines(graphs: dict[str, Any]) -> list[Text]:
    if not graphs or graphs.get("skipped"):
        reason = (graphs or {}).get("skipped", "not run")
        return [Text(f"compile probes: skipped ({reason})", style="dim")]
    explain = graphs.get("explain") or {}
    lines: list[Text] = []
    if graphs.get("device_error"):
        lines.append(
            Text(f"Dynamo cannot trace the forward on the device: {graphs['device_error']}", "red")
        )
    if "error" in explain:
        lines.append(Text(f"graph breaks: explain failed: {explain['error']}", style="yellow"))
    else:
        n = explain.get("graph_breaks", 0)
        lines.append(
            Text(
                f"graph breaks: {n} ({explain.get('graphs')} graph(s), "
                f"{explain.get('ops_in_graphs')} ops captured)",
                style="yellow" if n else "green",
            )
        )
        for r in explain.get("reasons", []):
            lines.append(Text(f"  {r['where'] or '?'}: {r['reason']}", style="yellow"))
    full = graphs.get("fullgraph") or {}
    if "passed" in full:
        text = "compiles as one graph" if full["passed"] else f"fails: {full['error']}"
        lines.append(Text(f"fullgraph=True: {text}", style="green" if full["passed"] else "yellow"))
    rec = graphs.get("recompilations") or {}
    if "recompilations" in rec:
        lines.append(
            Text(f"recompilations: {rec['recompilations']} over {rec['calls']} forward call(s)")
        )
        for r in rec.get("reasons", []):
            lines.append(Text(f"  {r['reason']}", style="dim"))
    lines.append(Text(f"({graphs.get('note')}; ran on {graphs.get('ran_on')})", style="dim"))
    return lines


def scan_renderables(ops: dict[str, Any]) -> list[RenderableType]:
    """Everything ``parity scan`` prints about one side's ``ops.json``."""
    parts: list[RenderableType] = []
    summary = ops.get("summary") or {}
    parts.append(
        Text(
            f"scanned {ops.get('steps_scanned')} step(s) on {ops.get('device')}: "
            f"{summary.get('ops')} distinct ops, calls per step {summary.get('op_calls_per_step')}",
            style="bold",
        )
    )
    custom = ops.get("custom_ops") or []
    if custom:
        parts.append(
            _findings_table(
                "Custom ops: test these on the target first",
                [(c["op"], _dtypes(c), _where(c), str(c["count"])) for c in custom],
                ("op", "dtypes", "where", "calls"),
            )
        )
    unsupported = ops.get("unsupported") or []
    if unsupported:
        parts.append(
            _findings_table(
                f"Unsupported on {ops.get('device')}: {len(unsupported)} op(s)",
                [
                    (u["op"], _dtypes(u), ", ".join(u["phases"]), _where(u), _code(u))
                    for u in unsupported
                ],
                ("op", "dtypes", "phase", "where", "code"),
            )
        )
    else:
        parts.append(Text("unsupported ops: none", style="green"))
    fallbacks = ops.get("fallbacks") or {}
    backend = fallbacks.get("backend") or {}
    if backend.get("backend"):
        fb = backend.get("fallback_ops") or []
        parts.append(
            Text(
                f"{backend['backend']} reports {len(fb)} CPU fallback op(s)"
                + (f": {', '.join(fb)}" if fb else ""),
                style="yellow" if fb else "green",
            )
        )
    else:
        parts.append(Text(str(backend.get("note", "no backend fallback report")), style="dim"))
    for m in fallbacks.get("device_mismatch") or []:
        parts.append(Text(f"fallback? {m['op']} at {m['where']}: {m['detail']}", style="yellow"))
    syncs = ops.get("host_syncs") or []
    if syncs:
        parts.append(
            _findings_table(
                "Host syncs inside a step",
                [(s["op"], s["detail"], s["where"], str(s["count"])) for s in syncs],
                ("op", "why", "where", "calls"),
            )
        )
    copies = fallbacks.get("copies") or []
    for c in copies:
        parts.append(
            Text(f"copy {c['detail']}: {c['op']} at {c['where']} x{c['count']}", style="dim")
        )
    parts.extend(_compile_lines(ops.get("graphs") or {}))
    plain = ops.get("plain_run") or {}
    if plain.get("ran"):
        if plain.get("failed"):
            err = plain.get("error") or {}
            parts.append(
                Text(
                    f"plain step without the CPU crutch: fails with {err.get('type')}: "
                    f"{err.get('message')} at {err.get('where')}",
                    style="red",
                )
            )
        else:
            parts.append(Text("plain step without the CPU crutch: runs", style="green"))
    if ops.get("scan_error"):
        err = ops["scan_error"]
        parts.append(
            Text(f"the scan stopped: {err['type']}: {err['message']} at {err['where']}", "red")
        )
    v = ops.get("versions") or {}
    if v:
        pkgs = ", ".join(f"{k} {x or '-'}" for k, x in (v.get("backend_packages") or {}).items())
        parts.append(
            Text(
                f"python {v.get('python')}, torch {v.get('torch')}" + (f", {pkgs}" if pkgs else ""),
                style="dim",
            )
        )
    return parts


def _where(entry: dict[str, Any]) -> str:
    return "\n".join(str(s["where"]) for s in entry.get("sources", [])) or "-"


def _code(entry: dict[str, Any]) -> str:
    return "\n".join(str(s.get("code") or "") for s in entry.get("sources", [])) or "-"


def _side_lines(role: str, spec: str, side: dict[str, Any]) -> list[Text]:
    if not side.get("scanned"):
        return [Text(f"{role} {spec}: no op scan in its bundle", style="dim")]
    counts = side.get("counts") or {}
    head = (
        f"{role} {spec}: {counts.get('unsupported', 0)} unsupported, "
        f"{counts.get('fallbacks', 0)} fallback(s), {counts.get('host_syncs', 0)} host "
        f"sync call(s), graph breaks {side.get('graph_breaks', '-')}, "
        f"{counts.get('custom_ops', 0)} custom op(s)"
        + (" (scanned after the side failed)" if side.get("after_failure") else "")
    )
    lines = [Text(head, style="green" if side.get("clean") else "yellow")]
    for c in side.get("custom_ops", []):
        lines.append(Text(f"  custom op, test first: {c['op']} at {c['where']}", style="bold"))
    for u in side.get("unsupported", []):
        lines.append(
            Text(f"  unsupported: {u['op']} [{', '.join(u['dtypes'])}] at {u['where']}", "red")
        )
    fb = side.get("fallbacks") or {}
    for op in fb.get("ops", []):
        lines.append(Text(f"  CPU fallback ({fb.get('backend')}): {op}", style="yellow"))
    for m in fb.get("device_mismatch", []):
        lines.append(Text(f"  output on another device: {m['op']} at {m['where']}", "yellow"))
    for s in side.get("host_syncs", []):
        lines.append(Text(f"  host sync: {s['op']} at {s['where']} x{s['count']}", "yellow"))
    if side.get("compile_device_error"):
        lines.append(Text(f"  torch.compile: {side['compile_device_error']}", style="yellow"))
    for r in side.get("graph_break_reasons", []):
        lines.append(Text(f"  graph break at {r['where']}: {r['reason']}", style="yellow"))
    return lines


def compatibility_renderables(v: dict[str, Any]) -> list[RenderableType]:
    """The verdict's compatibility section: per side, then versions side by side."""
    comp = v.get("compatibility") or {}
    if not comp:
        return []
    parts: list[RenderableType] = [Text("Compatibility (op scan of each side)", style="bold")]
    for role in ("baseline", "target"):
        spec = str((v.get("sides") or {}).get(role, {}).get("spec", ""))
        parts.extend(_side_lines(role, spec, comp.get(role) or {}))
    rows = comp.get("versions") or []
    if rows:
        table = Table(title="Versions", title_justify="left")
        for col in ("", "baseline", "target", ""):
            table.add_column(col)
        for r in rows:
            flag = (
                Text("MISMATCH", style="bold red")
                if r.get("mismatch")
                else Text("one side", style="dim")
                if r.get("one_side")
                else Text("")
            )
            table.add_row(r["name"], str(r["baseline"] or "-"), str(r["target"] or "-"), flag)
        parts.append(table)
    return parts


def print_all(console: Console, parts: list[RenderableType]) -> None:
    for part in parts:
        console.print(part)
