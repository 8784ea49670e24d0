"""The verdict as Rich tables for a terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text


def fmt_s(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


def fmt_bytes(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def fmt_rate(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:,.1f} {unit}/s"


def _mark(passed: bool | None) -> Text:
    if passed is None:
        return Text("info", style="cyan")
    return Text("PASS", style="bold green") if passed else Text("FAIL", style="bold red")


def sides_table(v: dict[str, Any]) -> Table:
    table = Table(title="Sides", title_justify="left")
    table.add_column("")
    for role in ("baseline", "target"):
        table.add_column(f"{role}\n{v['sides'][role]['spec']}", justify="right")
    rows: list[tuple[str, str, str]] = []
    sides = v["sides"]
    rows.append(("status", sides["baseline"]["status"], sides["target"]["status"]))
    rows.append(
        (
            "device",
            str(sides["baseline"]["device_name"] or "-"),
            str(sides["target"]["device_name"] or "-"),
        )
    )
    phases = v.get("phases") or {}
    if phases:
        for key, label in (
            ("start_import_s", "start + import"),
            ("load_s", "load + move"),
            ("first_step_s", "first step"),
            ("warmup_s", "warm-up"),
        ):
            rows.append(
                (label, fmt_s(phases["baseline"].get(key)), fmt_s(phases["target"].get(key)))
            )
        rows.append(
            (
                "steady after",
                f"{phases['baseline'].get('warmup_steps', 0) + 1} steps",
                f"{phases['target'].get('warmup_steps', 0) + 1} steps",
            )
        )
    rows.append(
        (
            "median step (steady)",
            fmt_s(sides["baseline"]["median_step_s"]),
            fmt_s(sides["target"]["median_step_s"]),
        )
    )
    for key, unit in (("samples_per_s", "samples"), ("tokens_per_s", "tokens")):
        a = (sides["baseline"].get("throughput") or {}).get(key)
        b = (sides["target"].get("throughput") or {}).get(key)
        if a is not None or b is not None:
            rows.append((f"throughput ({unit})", fmt_rate(a, unit), fmt_rate(b, unit)))
    rows += latency_rows(sides)
    rows += flops_rows(sides)
    rows.append(
        (
            "repeats ok",
            f"{sides['baseline'].get('repeats_ok', 1)}/{sides['baseline'].get('repeats', 1)}",
            f"{sides['target'].get('repeats_ok', 1)}/{sides['target'].get('repeats', 1)}",
        )
    )
    mem = v.get("memory") or {}
    if mem:
        for key, label in (("host_peak_rss", "host peak RSS (steps)"),):
            rows.append(
                (
                    label,
                    fmt_bytes(mem["baseline"]["steps"].get(key)),
                    fmt_bytes(mem["target"]["steps"].get(key)),
                )
            )
        da = mem["baseline"]["steps"]["device"].get("allocated")
        db = mem["target"]["steps"]["device"].get("allocated")
        if da is not None or db is not None:
            rows.append(("device peak allocated", fmt_bytes(da), fmt_bytes(db)))
    for row in rows:
        table.add_row(*row)
    return table


def latency_rows(sides: dict[str, Any]) -> list[tuple[str, str, str]]:
    """p50/p90/p99 of generation (TTFT, TPOT, ITL, end to end) or inference latency."""
    rows = []
    for section, metrics in (
        ("generation", ("ttft_s", "tpot_s", "itl_s", "e2e_s")),
        ("inference", ("latency_s",)),
    ):
        a, b = sides["baseline"].get(section), sides["target"].get(section)
        if not a or not b:
            continue
        for metric in metrics:
            label = metric.removesuffix("_s").upper() if metric != "e2e_s" else "end to end"
            if metric == "latency_s":
                label = "latency"
            rows.append((f"{label} p50/p90/p99", _pcts(a[metric]), _pcts(b[metric])))
    return rows


def _pcts(p: dict[str, Any]) -> str:
    return " / ".join(fmt_s(p.get(k)) for k in ("p50", "p90", "p99"))


def flops_rows(sides: dict[str, Any]) -> list[tuple[str, str, str]]:
    fa, fb = sides["baseline"].get("flops") or {}, sides["target"].get("flops") or {}
    if not fa.get("achieved_flops") and not fb.get("achieved_flops"):
        return []

    def mfu(f: dict[str, Any]) -> str:
        if f.get("mfu") is None:
            return "no peak known"
        peak, per = f["peak"], f" per {f['peak_unit']}" if f.get("peak_unit") else ""
        return f"{f['mfu']:.1%} of {peak['flops'] / 1e12:.0f} TFLOP/s {peak['dtype']}{per}"

    def achieved(f: dict[str, Any]) -> str:
        value = f.get("achieved_flops")
        return "-" if value is None else f"{value / 1e9:,.1f} GFLOP/s"

    return [("achieved FLOP/s", achieved(fa), achieved(fb)), ("MFU", mfu(fa), mfu(fb))]


def quality_table(v: dict[str, Any]) -> Table:
    table = Table(title="Quality (target against baseline)", title_justify="left")
    for col in ("check", "result", "figure", "tolerance"):
        table.add_column(col)
    for c in v["quality"].get("checks", []):
        if c["kind"] == "loss" and "final_rel" in c:
            figure = (
                f"final {c['final_baseline']:.4f} vs {c['final_target']:.4f} "
                f"(rel {c['final_rel']:.2e}, max over steps {c['max_rel']:.2e})"
            )
        elif c["kind"] == "output" and "rel_rmse" in c:
            figure = f"rel RMSE {c['rel_rmse']:.2e}, max abs {c['max_abs']:.2e}"
        elif c["kind"] == "tokens":
            figure = f"{c['agreement']:.0%} of tokens agree"
        elif c["kind"] == "fp64" and "rmse_target" in c:
            figure = (
                f"vs fp64: rmse {c['rmse_target']:.2e} (bound {c['bound']:.2e}, baseline "
                f"{c['rmse_baseline']:.2e}), passes by {c['rule']}; min atol {c['min_atol']:.1e}"
            )
        elif c["kind"] == "cosine" and "cosine" in c:
            figure = f"cosine {c['cosine']:.4f} with the baseline (no fp64 reference)"
        else:
            figure = c.get("detail", "")
        tol = c.get("tolerance")
        shown = c.get("passed") if c.get("gated", True) else None
        table.add_row(c["name"], _mark(shown), figure, "-" if tol is None else f"{tol:.0e}")
    return table


def render(v: dict[str, Any], console: Console) -> None:
    w = v["workload"]
    parts: list[Any] = [
        Text(
            f"workload {w['name']} ({w['size']}, {w['kind']}), fingerprint {w['fingerprint'][:12]}",
            style="bold",
        ),
    ]
    fair = v["fairness"]
    if fair.get("verified") is False:  # script mode
        parts.append(Text(f"fairness: {fair['note']} (contract unverified)", style="yellow"))
    elif fair["fingerprint_match"]:
        parts.append(Text("fairness: both sides ran the same frozen workload", style="green"))
    else:
        for field, reason in fair["allowed"].items():
            parts.append(Text(f"fairness: {field} differs, allowed: {reason}", style="yellow"))
    for d in v["config_differences"]:
        parts.append(
            Text(f"configuration change: {d['setting']}: {d['baseline']} -> {d['target']}")
        )
    for d in v["environment_differences"]:
        parts.append(
            Text(
                f"environment difference: {d['field']}: {d['baseline']} -> {d['target']}",
                style="dim",
            )
        )
    console.print(Panel(Group(*parts), title="parity verdict", expand=False))
    console.print(sides_table(v))
    for role in ("baseline", "target"):
        side = v["sides"][role]
        if side["status"] != "ok":
            console.print(Text(f"{role} failed: {side['reason']}", style="bold red"))
            if side.get("stderr_tail"):
                console.print(Text(side["stderr_tail"], style="dim"))
        for warning in side.get("noise_warnings") or []:
            console.print(Text(f"{role}: {warning}", style="yellow"))
    compatibility_section(v, console)
    if v["quality"]:
        console.print(quality_table(v))
        for role, det in (v["quality"].get("determinism") or {}).items():
            if det.get("checked"):
                text = (
                    "bitwise equal"
                    if det["bitwise_equal"]
                    else f"max output difference {det['max_abs_output_diff']:.2e}"
                )
                console.print(
                    Text(f"determinism ({role}, two fresh processes): {text}", style="dim")
                )
    numerics_section(v, console)
    if v.get("withheld"):
        console.print(Text(v["withheld"], style="bold red"))
    speed = v.get("speed")
    if speed:
        ci = speed["interval"]
        console.print(
            Text(
                f"speed: target/baseline step time {speed['ratio']:.3f} "
                f"[{ci['low']:.3f}, {ci['high']:.3f}] ({ci['confidence']:.0%} interval), "
                f"speedup {speed['speedup']:.2f}x: {speed['verdict']}",
                style="bold",
            )
        )
        if speed.get("stop"):
            console.print(Text(f"  measuring ended: {speed['stop']['message']}", style="dim"))
        if speed.get("note"):
            console.print(Text(f"  {speed['note']}", style="dim"))
        if not speed.get("reliable", True):
            console.print(
                Text(
                    "  the speed claim is unreliable: a compliance check failed "
                    "(below); rerun on an idle machine",
                    style="bold yellow",
                )
            )
        for check in speed.get("compliance") or []:
            console.print(
                Text.assemble("  ", _mark(check["passed"]), f" {check['name']}: {check['detail']}")
            )
    cost_section(v, console)
    decision_section(v, console)
    for gate in v["gates"]:
        line = Text.assemble(_mark(gate["passed"]), f"  {gate['name']}: {gate['detail']}")
        console.print(line)
    final = "PASS: the target passes every gate" if v["passed"] else "FAIL: the target fails a gate"
    console.print(Text(final, style="bold green" if v["passed"] else "bold red"))


def curve_table(curve: dict[str, Any]) -> Table:
    """The throughput-latency curve: one row per batch size."""
    table = Table(title="Throughput and latency by batch size", title_justify="left")
    for col in (
        "batch",
        "baseline p50 / p99",
        "baseline samples/s",
        "target p50 / p99",
        "target samples/s",
    ):
        table.add_column(col, justify="right")
    for p in curve["points"]:
        cells = [str(p["batch_size"])]
        for role in ("baseline", "target"):
            lat = p[role]["latency_s"] or {}
            cells.append(f"{fmt_s(lat.get('p50'))} / {fmt_s(lat.get('p99'))}")
            rate = (p[role]["throughput"] or {}).get("samples_per_s")
            cells.append("-" if rate is None else f"{rate:,.1f}")
        table.add_row(*cells)
    return table


def numerics_section(v: dict[str, Any], console: Console, rows: int = 12) -> None:
    """Where the target's numbers start to differ: the per-module table around the first
    divergence, the top amplifiers, and time to the target loss."""
    n = v.get("numerics") or {}
    if not n.get("available"):
        if n.get("reason"):
            console.print(Text(f"numerics probe: {n['reason']}", style="dim"))
        return
    layers = n.get("layers")
    if layers:
        table = Table(
            title=f"Per-module error against fp64 (target {n['precision']})", title_justify="left"
        )
        for col in ("module", "type", "baseline rel err", "target rel err", "x input"):
            table.add_column(col, justify="right" if col != "module" else "left")
        leaf_rows = [r for r in layers["table"] if r.get("leaf", True)]
        first = layers.get("first_divergence")
        start = next((i for i, r in enumerate(leaf_rows) if r["module"] == first), 0)
        for r in leaf_rows[max(0, start - 2) : max(0, start - 2) + rows]:
            style = "bold red" if r["module"] == first else None
            table.add_row(
                r["module"],
                str(r["type"]),
                f"{r['baseline_error']:.2e}",
                f"{r['target_error']:.2e}",
                f"{r['amplification']:.1f}",
                style=style,
            )
        console.print(table)
        console.print(
            Text(
                f"first diverging module: {first or 'none'} ({layers['rule']})",
                style="bold" if first else "green",
            )
        )
        if layers.get("top_amplification"):
            console.print(
                Text(
                    "top error amplification: " + ", ".join(layers["top_amplification"]),
                    style="dim",
                )
            )
    for role, conv in (v.get("quality", {}).get("convergence") or {}).items():
        mean = conv["mean_time_s"]
        console.print(
            Text(
                f"time to loss {conv['target_loss']:g} ({role}): "
                + (f"{mean:.2f} s mean, " if mean is not None else "never reached, ")
                + f"{conv['success_rate']:.0%} of runs converged"
            )
        )


def compatibility_section(v: dict[str, Any], console: Console) -> None:
    """Unsupported ops, fallbacks, host syncs, graph breaks, custom ops, versions."""
    from parity.report.ops import compatibility_renderables

    for part in compatibility_renderables(v):
        console.print(part)


def _usd(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def cost_section(v: dict[str, Any], console: Console) -> None:
    cost = v.get("cost")
    if not cost:
        return
    if not cost.get("available"):
        console.print(Text(f"cost: {cost.get('reason')}", style="dim"))
        return
    table = Table(title=f"Cost per {cost['unit']}", title_justify="left")
    for col in ("", "baseline", "target"):
        table.add_column(col, justify="right")
    b, t = cost["baseline"], cost["target"]

    def price(c: dict[str, Any]) -> str:
        p = c["price"]
        name = f"{p['instance']} " if p.get("instance") else ""
        return f"{name}${p['usd_per_hour']:.2f}/h / {p['accelerators']}"

    table.add_row("price", price(b), price(t))
    table.add_row(
        "per accelerator-hour",
        _usd(b["usd_per_accelerator_hour"]),
        _usd(t["usd_per_accelerator_hour"]),
    )
    if "success_rate" in b:
        table.add_row("basis", str(b["basis"]), str(t["basis"]))
        table.add_row("time per run", fmt_s(b["run_seconds"]), fmt_s(t["run_seconds"]))
        table.add_row("success rate", f"{b['success_rate']:.0%}", f"{t['success_rate']:.0%}")
    table.add_row(f"cost per {cost['unit']}", _usd(b["unit_cost"]), _usd(t["unit_cost"]))
    console.print(table)
    console.print(
        Text(
            f"cost: the target costs {cost['cost_ratio']:.2f}x the baseline per {cost['unit']} "
            f"({cost['verdict']}); break-even target price ${cost['break_even_usd_per_hour']:.2f}"
            "/h per instance",
            style="bold",
        )
    )
    if cost.get("sensitivity"):
        console.print(Text(f"  {cost['sensitivity']['text']}", style="dim"))
    eng = cost.get("engineering")
    if eng:
        repay = eng["units_to_repay"]
        console.print(
            Text(
                f"  engineering ${eng['usd']:,.0f} one-off: "
                + (f"repaid after {repay:,.0f} x {cost['unit']}" if repay else "never repaid"),
                style="dim",
            )
        )


def decision_section(v: dict[str, Any], console: Console) -> None:
    contract = v.get("contract") or {}
    if contract:
        broken = [r["field"] for r in contract["must_match"] if not r["matches"]]
        console.print(
            Text(
                "contract: "
                + (
                    f"unverified ({contract['note']})"
                    if contract.get("verified") is False
                    else "every fingerprint field matches"
                    if not broken
                    else f"{', '.join(broken)} differ (allowed)"
                ),
                style="green" if not broken else "yellow",
            )
        )
    ops = v.get("operational") or []
    if any(o["answered"] for o in ops):
        for o in ops:
            mark = "[x]" if o["answered"] else "[ ]"
            console.print(Text(f"  {mark} {o['item']}: {o['answer'] or 'unanswered'}"))
    unproven = v.get("unproven") or []
    if unproven:
        open_items = [u["item"] for u in unproven if not u["checked"]]
        console.print(
            Text("not yet proven by this comparison: " + ", ".join(open_items), style="yellow")
        )
